package wave

import (
	"github.com/binlake/binlake/wave/balancer"
	"github.com/binlake/binlake/wave/cluster"
)

// Names config.go, balancerconfig.go and secret.go use from the packages that hold them
// now (wave/cluster, wave/balancer).

var reID = cluster.IDPattern

// Source is an instance's source (cluster.Source): SourcePassword reads its password.
type Source = cluster.Source

// BalancerOptions configure the wave's part in balancing (balancer.Options), which the
// balancer: section of the config gives.
type BalancerOptions = balancer.Options
