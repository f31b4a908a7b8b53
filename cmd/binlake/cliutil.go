// Small helpers of every build (the agent-only binary uses them too).
package main

import (
	"flag"
	"fmt"
)

// count is "1 node", "2 nodes".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// flagSet reports whether the flag name was given on the command line (not defaulted).
func flagSet(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
