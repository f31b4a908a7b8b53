package judge

import (
	"net/http"
	"slices"

	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/judge/api"
)

// handleMetricNames answers GET /v1/metric-names: the names of every series of the
// current hour and of the last historical refresh, so that a policy watching a name no
// agent sends (a typo) can be told apart from one a sender of one's own posts.
func (j *Judge) handleMetricNames(w http.ResponseWriter, r *http.Request) {
	ans := api.MetricNames{Names: []string{}, Hour: j.inc.Hour()}
	for _, n := range j.inc.Nodes() {
		for _, s := range n.Series {
			ans.Names = append(ans.Names, s.Name)
		}
	}
	if snap := j.hist.Snapshot(); snap != nil {
		asOf := snap.AsOf.UTC()
		ans.HistoricalAsOf = &asOf
		for _, metrics := range snap.Nodes {
			for name := range metrics {
				ans.Names = append(ans.Names, name)
			}
		}
	}
	slices.Sort(ans.Names)
	ans.Names = slices.Compact(ans.Names)
	httpapi.WriteJSON(w, r, http.StatusOK, ans)
}
