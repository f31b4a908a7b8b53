// Package all registers every placement algorithm: import it for its side effect.
package all

import (
	_ "github.com/binlake/binlake/lbplugins/balanced"    // registers "balanced"
	_ "github.com/binlake/binlake/lbplugins/leastload"   // registers "leastload"
	_ "github.com/binlake/binlake/lbplugins/p2c"         // registers "p2c"
	_ "github.com/binlake/binlake/lbplugins/predictive"  // registers "predictive"
	_ "github.com/binlake/binlake/lbplugins/random"      // registers "random"
	_ "github.com/binlake/binlake/lbplugins/utilisation" // registers "utilisation"
)
