// Package deploy holds what the suite ships besides its binary: the systemd units, the
// installer and the starter and example configs (README.md). Its Go side is the one file
// the binary needs at run time, the default alert policies, so that `binlake up` and an
// installed alarm run the same ones.
package deploy

import _ "embed"

// Policies is policies.yaml: the default alert policies, which install.sh installs as
// /etc/binlake/policies.yaml and `binlake up` runs when --policies names no file.
//
//go:embed policies.yaml
var Policies []byte
