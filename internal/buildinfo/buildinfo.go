// Package buildinfo reports the version of the running binary.
package buildinfo

import "runtime/debug"

// Version is set at link time (-ldflags "-X github.com/binlake/binlake/internal/buildinfo.Version=v1.2.3");
// without it the module version or VCS revision from the build info is used.
var Version = ""

// String returns the version, never empty.
func String() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel-" + s.Value[:12]
		}
	}
	return "devel"
}
