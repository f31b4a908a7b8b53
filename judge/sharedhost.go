package judge

import (
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
)

// Waves that share a host. Every agent on a host reports the host's cores and CPU, so
// waves side by side on one host (a trial on one machine, a small site) each read the
// whole host's cores as their capacity and the others' CPU as their host's other work:
// they all stood at the same utilisation whatever they ran, a wave emptied by a
// failover or just added as busy as the others, and no plan could tell them apart.
// The agents' host.info names the host (its kernel's boot id); the live waves that
// report the same one share its cores equally, and each has, besides its own process's
// CPU, an equal part of what the host does beyond all of them. Their utilisations then
// add up to the host's (their mean is the host's utilisation), and moving an instance
// between them moves its cost. Waves on a host of their own are as before.

// bootIDOf is the boot id n's host reports (host.info's label), "" when none: its
// latest series not stopped.
func bootIDOf(n analysis.Node) string {
	var id string
	var at analysis.Series
	for _, s := range n.Series {
		if s.Name == metric.HostInfo && s.Labels[labelBootID] != "" && !n.Stopped(s) && (id == "" || s.LastTS.After(at.LastTS)) {
			id, at = s.Labels[labelBootID], s
		}
	}
	return id
}

const labelBootID = "boot_id"

// shareHosts divides, among the views that report the same host, that host's cores and
// the CPU beyond their processes' (see above), and names in each the waves beside it.
// views are the live waves: a wave whose process is down uses none of the host.
func shareHosts(views []*waveView) {
	byHost := map[string][]*waveView{}
	for _, v := range views {
		if v.bootID != "" && v.cores > 0 {
			byHost[v.bootID] = append(byHost[v.bootID], v)
		}
	}
	for _, group := range byHost {
		if len(group) < 2 {
			continue
		}
		k := float64(len(group))
		// One host, one reading: the agents sample it at different moments, so the
		// group takes their mean.
		var cores, host, last, own float64
		hasHost, hasOwn := true, true
		for _, v := range group {
			cores += v.cores / k
			if v.host == nil {
				hasHost = false
			} else {
				host += v.host[0] / k
				last += v.hostLast / k
			}
			hasOwn = hasOwn && v.costs.hasCPU
			own += v.costs.cpu
		}
		for _, v := range group {
			v.cores = cores / k
			for _, w := range group {
				if w != v {
					v.sharesWith = append(v.sharesWith, w.node)
				}
			}
			switch {
			case !hasHost:
				v.host = nil
			case hasOwn: // its process, and its part of the rest
				v.host = []float64{v.costs.cpu + max(0, host-own)/k}
				v.hostLast = v.costs.cpu + max(0, last-own)/k
			default: // without the processes' CPU, an equal part of the host's
				v.host = []float64{host / k}
				v.hostLast = last / k
			}
		}
	}
}

// shareWithSiblings shares v's host with the waves running beside it (shareHosts), for
// one node's load (GET /v1/nodes/{id}): as the plans and placements have it.
func (j *Judge) shareWithSiblings(v *waveView) {
	group := []*waveView{v}
	now := j.now()
	for _, n := range j.inc.Nodes() {
		if ws, ok := j.waveStatusOf(n, now); n.Node != v.node && ok && ws.Live && bootIDOf(n) == v.bootID {
			sib := j.viewOf(n)
			group = append(group, &sib)
		}
	}
	shareHosts(group)
}
