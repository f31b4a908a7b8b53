package bus

import (
	"errors"
	"fmt"
)

// MaxTopicName is Kafka's limit on topic name length.
const MaxTopicName = 249

// CheckTopicName reports whether name is a legal Kafka topic name: 1–249 characters
// of [a-zA-Z0-9._-], and not "." or "..".
func CheckTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("topic name is empty")
	case len(name) > MaxTopicName:
		return fmt.Errorf("topic name %.40q… is %d characters, more than %d", name, len(name), MaxTopicName)
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q has character %q at %d; only [a-zA-Z0-9._-] are allowed", name, c, i)
		}
	}
	return nil
}
