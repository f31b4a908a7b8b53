package wave

import "github.com/binlake/binlake/wave/cluster"

// Names config.go and secret.go use from the instance's definition, which wave/cluster
// holds.
var reID = cluster.IDPattern

// Source is an instance's source (cluster.Source): SourcePassword reads its password.
type Source = cluster.Source
