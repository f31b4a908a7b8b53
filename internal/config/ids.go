package config

import "regexp"

// IDPattern is an id of the suite's own: a wave's node, which its agent reports as its
// node too, and a capture instance. 1–128 letters, digits, '.', '_' or '-', starting
// with a letter or digit: it goes into ZooKeeper paths, Kafka keys and URL paths as it is.
var IDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// IDRule says IDPattern in words, for errors.
const IDRule = "want 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
