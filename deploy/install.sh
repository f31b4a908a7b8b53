#!/usr/bin/env bash
# install.sh: install BinLake on one machine (or into a staging tree for a package).
# Run with --help for the options; deploy/README.md is the guide.
set -euo pipefail

ROLES=(wave agent alarm judge)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

usage() {
	cat <<EOF
Usage: deploy/install.sh [options]

Installs the binlake binary, the slim binlake-agent binary, the systemd units of the wave, agent, alarm and judge
roles, one config per role (deploy/<role>.yaml where there is one, the alarm's starter
configs, else deploy/<role>.example.yaml), the dashboards and the guide. Safe to run again: units and the binaries are replaced (the previous binaries, not the units, stay
as <binary>.prev), a config that exists is
kept, and when the shipped example differs it is written beside it as <config>.new.

Options (environment variables of the same name work too):
  --binary PATH      install this binlake binary instead of building one from this
                     checkout with 'go build' (needs Go)
  --agent-binary PATH
                     install this binlake-agent binary (make build-agent) for the agent
                     unit. Without it and without --binary, it is built from this
                     checkout with -tags agentonly; with --binary alone, the agent unit
                     keeps running an installed binlake-agent (not upgraded: a
                     warning says so), or runs the full binlake where there is none
  --prefix DIR       PREFIX, default /usr/local: the binary goes to PREFIX/bin, the
                     dashboards, the Prometheus rules and the guide to PREFIX/share
  --destdir DIR      DESTDIR, default empty: stage everything under DIR (for a
                     package). Nothing outside DIR is touched: no user is created,
                     no ownership changed, systemctl is not run. The paths it
                     reports are the files it wrote, DIR included. It ends with the
                     chown a package's post-install must run (the configs to
                     group binlake)
  --sysconfdir DIR   SYSCONFDIR, default /etc: configs go to SYSCONFDIR/binlake
  --unitdir DIR      UNITDIR, default /etc/systemd/system (packages: /usr/lib/systemd/system)
  --no-user          do not create the binlake system user
  -h, --help         this help

Without DESTDIR it must run as root: it creates the system user 'binlake' (when
missing), makes the configs readable by root and that group only, and runs
'systemctl daemon-reload' when systemd is running. It enables and starts nothing:
that is 'systemctl enable --now binlake-<role>' for the roles this machine runs.
EOF
}

die() { echo "install.sh: $*" >&2; exit 1; }
say() { echo "install.sh: $*"; }

BINARY=${BINARY:-}
AGENT_BINARY=${AGENT_BINARY:-}
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
SYSCONFDIR=${SYSCONFDIR:-/etc}
UNITDIR=${UNITDIR:-/etc/systemd/system}
# The units' working folders, which their StateDirectory names: not an option (the units
# say /var/lib/binlake); tests point it elsewhere.
STATEDIR=${STATEDIR:-/var/lib/binlake}
CREATE_USER=1

need_arg() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"; }
# value OPT=VALUE: VALUE, which must not be empty ("--destdir=" with an unset variable
# would otherwise mean a live install into /).
value() {
	[[ -n ${1#*=} ]] || die "${1%%=*} needs a value (see --help)"
	printf '%s' "${1#*=}"
}
while [[ $# -gt 0 ]]; do
	case $1 in
	--binary) need_arg "$@"; BINARY=$2; shift 2 ;;
	--binary=*) BINARY=$(value "$1") || exit 1; shift ;;
	--agent-binary) need_arg "$@"; AGENT_BINARY=$2; shift 2 ;;
	--agent-binary=*) AGENT_BINARY=$(value "$1") || exit 1; shift ;;
	--prefix) need_arg "$@"; PREFIX=$2; shift 2 ;;
	--prefix=*) PREFIX=$(value "$1") || exit 1; shift ;;
	--destdir) need_arg "$@"; DESTDIR=$2; shift 2 ;;
	--destdir=*) DESTDIR=$(value "$1") || exit 1; shift ;;
	--sysconfdir) need_arg "$@"; SYSCONFDIR=$2; shift 2 ;;
	--sysconfdir=*) SYSCONFDIR=$(value "$1") || exit 1; shift ;;
	--unitdir) need_arg "$@"; UNITDIR=$2; shift 2 ;;
	--unitdir=*) UNITDIR=$(value "$1") || exit 1; shift ;;
	--no-user) CREATE_USER=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
done

for v in PREFIX SYSCONFDIR UNITDIR; do
	[[ ${!v} == /* ]] || die "$v must be an absolute path, got '${!v}'"
	[[ ${!v} != *[[:space:]\|\&\\]* ]] || die "$v must not contain spaces or | & \\, got '${!v}'"
done
PREFIX=${PREFIX%/} SYSCONFDIR=${SYSCONFDIR%/} UNITDIR=${UNITDIR%/}
PREFIX=${PREFIX:-/} SYSCONFDIR=${SYSCONFDIR:-/}
if [[ -n $DESTDIR ]]; then
	DESTDIR=${DESTDIR%/}
	[[ $DESTDIR == /* ]] || DESTDIR=$PWD/$DESTDIR
	[[ $DESTDIR != / ]] || DESTDIR=
fi
system=0 # 1: a live install on this machine (user, ownership, systemctl)
if [[ -z $DESTDIR ]]; then
	system=1
	[[ $(id -u) -eq 0 ]] || die "installing into / needs root; run with sudo, or set DESTDIR to stage the files"
fi

bindir=$PREFIX/bin
confdir=$SYSCONFDIR/binlake
sharedir=$PREFIX/share/binlake
docdir=$PREFIX/share/doc/binlake

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The binaries: given, or built from this checkout.
build() { # build NAME [go build flags...]: build ./cmd/binlake into $tmp/NAME
	local name=$1
	shift
	command -v go >/dev/null || die "go is not on PATH: build with 'make build build-agent' and pass --binary bin/binlake --agent-binary bin/binlake-agent"
	[[ -f $repo/go.mod ]] || die "no go.mod in $repo: pass --binary"
	version=${version:-$(git -C "$repo" describe --tags --always --dirty 2>/dev/null || echo devel)}
	say "building $name $version"
	# The Makefile's flags, so that a 'make build build-agent' before shares the build cache.
	(cd "$repo" && go build -trimpath "$@" \
		-ldflags "-s -w -X github.com/binlake/binlake/internal/buildinfo.Version=$version" \
		-o "$tmp/$name" ./cmd/binlake) || die "go build of $name failed"
}
if [[ -n $BINARY ]]; then
	[[ -f $BINARY && -x $BINARY ]] || die "--binary $BINARY: not an executable file"
	# The slim agent binary knows no other role: the wave, judge and alarm units would
	# fail at start.
	"$BINARY" judge -h >/dev/null 2>&1 || die "--binary $BINARY: not the full binlake ('$BINARY judge -h' fails: is it binlake-agent? that one goes to --agent-binary)"
	bin=$BINARY
else
	build binlake
	bin=$tmp/binlake
fi
# The agent unit runs the slim binlake-agent (-tags agentonly: only the agent is linked,
# ~10 MiB less RSS; BENCHMARKS.md "agent"). agent_bin empty: it runs the full binlake,
# unless keep_agent is 1: an installed binlake-agent stays, and the unit runs it.
keep_agent=0
if [[ -n $AGENT_BINARY ]]; then
	[[ -f $AGENT_BINARY && -x $AGENT_BINARY ]] || die "--agent-binary $AGENT_BINARY: not an executable file"
	"$AGENT_BINARY" agent -h >/dev/null 2>&1 || die "--agent-binary $AGENT_BINARY: '$AGENT_BINARY agent -h' fails: not a binlake"
	agent_bin=$AGENT_BINARY
elif [[ -z $BINARY ]]; then
	build binlake-agent -tags agentonly
	agent_bin=$tmp/binlake-agent
elif [[ -x $DESTDIR$bindir/binlake-agent ]]; then
	# An upgrade that forgot --agent-binary: the agent unit keeps running the slim agent
	# of the earlier install, at its version (an old agent's batches are read by newer
	# consumers), rather than switching to the full binary behind the operator's back.
	agent_bin=
	keep_agent=1
	say "warning: no --agent-binary: binlake-agent.service keeps running $DESTDIR$bindir/binlake-agent, which this run leaves as it was (not upgraded, no binlake-agent.prev); pass --agent-binary NEW-AGENT to upgrade it, or remove it first for the agent unit to run the full binlake"
else
	agent_bin=
	say "no --agent-binary: binlake-agent.service runs the full binlake (make build-agent gives bin/binlake-agent)"
fi

# put SRC DST MODE: replace DST with SRC (atomically, via a temporary file beside it).
put() {
	local src=$1 dst=$2 mode=$3
	mkdir -p "$(dirname "$dst")"
	if [[ -f $dst ]] && cmp -s "$src" "$dst"; then
		chmod "$mode" "$dst"
		return
	fi
	install -m "$mode" "$src" "$dst.tmp.$$"
	mv -f "$dst.tmp.$$" "$dst"
	say "installed $dst"
}

# config SRC DST SHIPPED: install a config unless one exists. An existing one different
# from SRC is kept (a new binary and its config go in together, and a rollback to the
# binary kept as .prev finds the config it ran with) and SRC goes to DST.new to merge.
# SHIPPED is the copy of what the last install shipped: when this release changed it,
# the last release's goes to SHIPPED.prev (unless a .new of an earlier release is still
# unmerged: .prev then stays the one before it), so that `diff SHIPPED.prev DST.new`
# shows the releases' changes alone, apart from the operator's edits.
config() {
	local src=$1 dst=$2 shipped=$3 wrote=
	if [[ ! -e $dst ]]; then
		put "$src" "$dst" 0640
		wrote=$dst
	elif cmp -s "$src" "$dst"; then
		rm -f "$dst.new"
	elif [[ -f $dst.new ]] && cmp -s "$src" "$dst.new"; then
		say "kept $dst; $dst.new still holds the shipped config to merge"
	else
		local pending=0
		[[ ! -f $dst.new ]] || pending=1
		put "$src" "$dst.new" 0640
		wrote=$dst.new
		if [[ -f $shipped ]] && cmp -s "$shipped" "$dst"; then
			say "kept $dst, as the last release shipped it; this release's is $dst.new (diff -u $dst $dst.new: its changes; move it over $dst to take them)"
		elif [[ -f $shipped ]] && ! cmp -s "$shipped" "$src"; then
			# A .new left unmerged holds releases since .prev: .prev stays, so that the diff
			# shows every change still to merge, not the last release's alone.
			[[ $pending -eq 1 && -f $shipped.prev ]] || put "$shipped" "$shipped.prev" 0644
			say "kept $dst (edited); the shipped config changed: diff -u $shipped.prev $dst.new shows the changes since your config was last merged, to merge into $dst"
		else
			say "kept $dst; the shipped config differs: see $dst.new"
		fi
	fi
	put "$src" "$shipped" 0644
	# Only what this run wrote: an operator's own ownership of a kept config stays.
	if [[ $system -eq 1 && -n $wrote ]]; then
		chown root:binlake "$wrote"
	fi
	staged_configs+=("${dst#"$DESTDIR"}")
}
staged_configs=() # the configs' paths on the target machine, for a package's post-install

if [[ $system -eq 1 && $CREATE_USER -eq 1 ]] && ! getent passwd binlake >/dev/null; then
	getent group binlake >/dev/null || groupadd --system binlake
	useradd --system --gid binlake --home-dir /var/lib/binlake --no-create-home \
		--shell /usr/sbin/nologin --comment "BinLake services" binlake
	say "created system user binlake"
fi
if [[ $system -eq 1 ]] && ! getent group binlake >/dev/null; then
	die "group binlake does not exist (created with the user unless --no-user)"
fi

# The units' working folders (systemd's StateDirectory makes them at the first start, and
# keeps them binlake's, 0750): made now too, so that the guide's `--check`, run from the
# unit's folder as binlake, finds the folder a config's relative path (./data/…) is in.
# A folder not binlake's (made by a run without the user) is given to it; with --no-user
# and no user yet, they stay root's until the user exists (or systemd's first start).
user_ok=0
if [[ $system -eq 1 ]] && getent passwd binlake >/dev/null; then
	user_ok=1
fi
state_dirs=()
for role in "${ROLES[@]}"; do
	d=$DESTDIR$STATEDIR/$role
	state_dirs+=("$STATEDIR/$role")
	if [[ ! -d $d ]]; then
		install -d -m 0750 "$d"
		say "created $d"
	fi
	if [[ $user_ok -eq 1 && $(stat -c %U "$d") != binlake ]]; then
		chown binlake:binlake "$d"
	fi
done
if [[ $system -eq 1 && $user_ok -eq 0 ]]; then
	say "user binlake does not exist (--no-user): ${state_dirs[*]} stay root's; create the user, then run this again (or chown binlake:binlake them) before the guide's --check"
fi

# binary SRC NAME: install SRC as bindir/NAME; the one it replaces stays as NAME.prev
# for a rollback. SRC may be any path, NAME.prev itself included (a rollback with
# --binary .../binlake.prev swaps the two): SRC and the current NAME are copied beside
# NAME first, then renamed into place, so NAME is always there and nothing is lost.
binary() {
	local src=$1 dst=$DESTDIR$bindir/$2
	if [[ ! -f $dst ]] || cmp -s "$src" "$dst"; then
		put "$src" "$dst" 0755
		return
	fi
	install -m 0755 "$src" "$dst.tmp.$$"
	cp -p "$dst" "$dst.prev.tmp.$$"
	mv -f "$dst.tmp.$$" "$dst"
	mv -f "$dst.prev.tmp.$$" "$dst.prev"
	say "installed $dst"
	say "kept the previous binary as $dst.prev"
}
binary "$bin" binlake
[[ -z $agent_bin ]] || binary "$agent_bin" binlake-agent

# Units: the paths in the shipped files are the defaults; rewrite them for this layout.
for role in "${ROLES[@]}"; do
	src=$here/systemd/binlake-$role.service
	[[ -f $src ]] || die "missing $src"
	fallback=() # without binlake-agent the agent unit runs the full binary
	[[ -n $agent_bin || $keep_agent -eq 1 ]] || fallback=(-e "s|/usr/local/bin/binlake-agent |/usr/local/bin/binlake |g")
	sed "${fallback[@]}" -e "s|/usr/local/bin/binlake|$bindir/binlake|g" -e "s|/etc/binlake/|$confdir/|g" "$src" >"$tmp/binlake-$role.service"
	put "$tmp/binlake-$role.service" "$DESTDIR$UNITDIR/binlake-$role.service" 0644
done

# Configs: every deploy/<name>.example.yaml becomes <confdir>/<name>.yaml, unless a starter
# deploy/<name>.yaml exists: that one is installed instead (the alarm's, whose channel is
# its log, so that it starts without secret files) and the example is the reference.
mkdir -p "$DESTDIR$confdir"
chmod 0750 "$DESTDIR$confdir"
[[ $system -eq 0 ]] || chown root:binlake "$DESTDIR$confdir"
shopt -s nullglob
examples=("$here"/*.example.yaml)
[[ ${#examples[@]} -gt 0 ]] || die "no example configs in $here"
# inlayout SRC: SRC as this layout has it. The shipped configs and examples name the
# default folder (secret files, the commands to run): this layout's, as in the units.
inlayout() {
	sed -e "s|/etc/binlake/|$confdir/|g" -e "s|/etc/binlake\([^/]\)|$confdir\1|g" -e "s|/etc/binlake\$|$confdir|" "$1" >"$tmp/$(basename "$1")"
	echo "$tmp/$(basename "$1")"
}
for src in "${examples[@]}"; do
	name=$(basename "$src" .example.yaml)
	# The example itself, always current, for reference (instance's: a definition for
	# binlake instance add, not a role's config, which no unit reads).
	put "$(inlayout "$src")" "$DESTDIR$sharedir/examples/$name.example.yaml" 0644
	[[ $name != instance ]] || continue
	starter=$here/$name.yaml
	[[ -f $starter ]] || starter=$src
	config "$(inlayout "$starter")" "$DESTDIR$confdir/$name.yaml" "$DESTDIR$sharedir/shipped/$name.yaml"
done

# Dashboards and the guide.
for f in "$repo"/dashboards/grafana/*.json "$repo"/dashboards/kibana/*.ndjson; do
	put "$f" "$DESTDIR$sharedir/dashboards/$(basename "$(dirname "$f")")/$(basename "$f")" 0644
done
for f in "$repo"/dashboards/grafana/provisioning/*/*.yaml; do
	rel=${f#"$repo"/dashboards/}
	put "$f" "$DESTDIR$sharedir/dashboards/$rel" 0644
done
# Prometheus: the rules, their tests and an example scrape config (deploy/README.md, Prometheus).
for f in "$here"/prometheus/*.yml; do
	put "$f" "$DESTDIR$sharedir/prometheus/$(basename "$f")" 0644
done
put "$here/README.md" "$DESTDIR$docdir/deploy.md" 0644

if [[ $system -eq 1 ]]; then
	if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
		systemctl daemon-reload
		say "systemctl daemon-reload done"
	else
		say "systemd is not running here: no daemon-reload"
	fi
	say "next: edit $confdir/<role>.yaml, then systemctl enable --now binlake-<role>"
else
	# A live install gives the config folder and the configs it writes to group binlake
	# (0750, 0640) so that the units, which run as binlake, can read them; a stage
	# changes no ownership, so the package must, or no role starts.
	say "staged under $DESTDIR: the files belong to whoever ran this; a package must give the configs to group binlake, once the user exists (its post-install, or its file list):"
	say "  chown root:binlake $confdir ${staged_configs[*]}"
	say "  chown binlake:binlake ${state_dirs[*]}"
fi
