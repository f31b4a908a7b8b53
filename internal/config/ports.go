package config

// The roles' default addresses: one port per role, on loopback, the same whether the
// role runs alone (its config's http.listen) or inside binlake up, and wherever another
// part of the suite names it (the agent's wave collector). Each role has its own, so all
// of them can share one machine.
const (
	JudgeListen = "127.0.0.1:8090"
	WaveListen  = "127.0.0.1:8091"
	AlarmListen = "127.0.0.1:8092"
)
