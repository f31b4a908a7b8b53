package main

import "fmt"

// count is "1 node", "2 nodes" (every build: the agent-only binary says it too).
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
