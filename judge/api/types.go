package api

import (
	"slices"
	"time"

	"github.com/binlake/binlake/internal/rebalance"
	"github.com/binlake/binlake/lbplugins"
)

// The judge's request and answer types, shared by the judge (which answers) and its
// client (judge/client); openapi.json describes the same shapes.

// PlacementRequest is the body of POST /v1/placement.
type PlacementRequest struct {
	Instance  string   `json:"instance"`
	Exclude   []string `json:"exclude,omitempty"`
	Algorithm string   `json:"algorithm,omitempty"`
	// Top is how many of the best candidates the answer explains (lbplugins.DefaultTopK
	// when zero); Explain "all" explains every candidate and lists every filtered node.
	Top     int    `json:"top,omitempty"`
	Explain string `json:"explain,omitempty"`
	// DryRun answers without reserving capacity on the chosen node.
	DryRun bool `json:"dry_run,omitempty"`
	// Expected is what the caller knows of the new instance's work (binlake instance add
	// measures its source's binlog bytes/s); without it the judge takes the fleet's
	// typical instance. The utilisation algorithm prices it at each wave's prices, and
	// the reservation holds it on the chosen wave.
	Expected *WorkHint `json:"expected,omitempty"`
}

// WorkHint is a new instance's expected work as a placement request gives it: rows/s,
// bytes/s or both, each finite and ≥ 0. A hint of bytes alone takes its rows/s from the
// fleet's ratio of rows to bytes (and the other way round).
type WorkHint struct {
	RowsPerS  *float64 `json:"rows_per_s,omitempty"`
	BytesPerS *float64 `json:"bytes_per_s,omitempty"`
	// BinlogBytesPerS is the binlog the instance will read from its source a second
	// (every table's, whatever its filters publish: binlake instance add measures it);
	// without it, the bytes published at the fleet's ratio of binlog read to bytes
	// published.
	BinlogBytesPerS *float64 `json:"binlog_bytes_per_s,omitempty"`
}

// Work is an instance's work: the rows and bytes it publishes per second, and the
// binlog bytes it reads per second.
type Work struct {
	RowsPerS        float64 `json:"rows_per_s"`
	BytesPerS       float64 `json:"bytes_per_s"`
	BinlogBytesPerS float64 `json:"binlog_bytes_per_s,omitempty"`
}

// Sources of a placement's expected work.
const (
	// ExpectedHint: the request's hint (completed from the fleet's ratio of rows to
	// bytes when it gave one of the two; Note says so).
	ExpectedHint = "hint"
	// ExpectedTypical: no hint; the fleet's typical instance, the median rows/s and
	// bytes/s of the instances the agents report (Note says of how many).
	ExpectedTypical = "typical"
	// ExpectedNone: no hint and no instance measured anywhere: the instance is priced at
	// nothing (a wave's peak before is its peak after).
	ExpectedNone = "none"
	// ExpectedMeasured: no hint, and a wave reports the instance running (a move of a
	// running instance, `binlake instance move`): its own work, as that wave reports it.
	ExpectedMeasured = "measured"
)

// ExpectedWork is the new instance's work a placement weighed, and where it came from.
type ExpectedWork struct {
	Work
	Source string `json:"source"`
	Note   string `json:"note,omitempty"`
}

// Explain values.
const (
	ExplainTop = "top"
	ExplainAll = "all"
)

// Reservation is capacity a placement holds on its node until the node's reported
// wave.instances shows the instance (reaches Target) or the reservation expires.
type Reservation struct {
	Instance  string    `json:"instance"`
	Node      string    `json:"node"`
	At        time.Time `json:"at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Target is the wave.instances the node reports once it runs the instance: what it
	// reported at placement plus its reservations then, this one included. Zero when the
	// node reports no instance count (only expiry ends the reservation).
	Target float64 `json:"target_instances,omitempty"`
	// Expected is the instance's expected work the reservation holds on the node, and
	// Cores that work at the node's prices (the unit of the utilisation algorithm and of
	// the rebalancing plans); both absent when nothing is known of it or the node has no
	// prices.
	Expected Work    `json:"expected,omitzero"`
	Cores    float64 `json:"cores,omitempty"`
}

// PlacementAnswer is the answer to POST /v1/placement as a client decodes it: the node,
// how the decision was made, and the reservation it holds (none for a dry run).
type PlacementAnswer struct {
	Node          string                 `json:"node"`
	Algorithm     string                 `json:"algorithm"`
	DataAsOf      time.Time              `json:"data_as_of"`
	Candidates    int                    `json:"candidates"`
	Scores        []Score                `json:"scores"`
	Filtered      lbplugins.FilterCounts `json:"filtered"`
	FilteredNodes []lbplugins.Filtered   `json:"filtered_nodes,omitempty"`
	Reservation   *Reservation           `json:"reservation,omitempty"`
	// InstanceCost is what the instance costs where an agent reports it (explain "all"
	// only; absent when no agent reports it).
	InstanceCost *InstanceCost `json:"instance_cost,omitempty"`
	// Expected is the instance's expected work the decision weighed (the utilisation
	// algorithm's, or any with a hint); Note is what the algorithm says of how it decided
	// (the utilisation algorithm: what it scored by, or that it fell back to leastload).
	Expected *ExpectedWork `json:"expected,omitempty"`
	Note     string        `json:"note,omitempty"`
}

// Score is one candidate's score in a placement answer: its parts by name (the
// algorithm's weighted resources, or its raw inputs) and the placements still pending
// on it.
type Score struct {
	Node    string             `json:"node"`
	Score   float64            `json:"score"`
	Parts   map[string]float64 `json:"parts"`
	Pending float64            `json:"pending,omitempty"`
}

// RebalanceRequest is the body of POST /v1/rebalance: the cluster as its balancer knows
// it from the coordinator (the live waves, where each instance is assigned, which are
// pinned, when each last moved). The judge adds what each instance costs and plans with
// its configured goals (rebalance.* in judge.yaml). GET /v1/rebalance plans the same way
// from what the agents report instead (a dry run for an operator).
type RebalanceRequest struct {
	Waves     []RebalanceWave     `json:"waves"`
	Instances []RebalanceInstance `json:"instances"`
}

// RebalanceWave is one wave in a RebalanceRequest.
type RebalanceWave struct {
	Node  string `json:"node"`
	Alive bool   `json:"alive"`
}

// RebalanceInstance is one instance in a RebalanceRequest: the wave it is assigned to
// (required; one not among the request's live waves is moved), whether it must stay
// there, and when it last moved (zero: never), which the cooldown counts from.
type RebalanceInstance struct {
	ID      string    `json:"id"`
	Node    string    `json:"node"`
	Pinned  bool      `json:"pinned,omitempty"`
	MovedAt time.Time `json:"moved_at,omitzero"`
}

// InstanceCost is what one instance costs a wave, from the per-instance series its wave's
// agent reports: rows/s and bytes/s (EWMAs of wave.tps and wave.bytes_per_s), and its
// cost in CPU cores at the prices the judge fitted for that wave (the utilisation
// model: CoresNow now, CoresPeak at the hour of the day its work peaks). CPUShare is the
// wave process's CPU (wave.cpu_cores) split by rows, for comparison. Cost is what the
// plan used: cores in the utilisation model, rows/s plus the configured floor in the
// rows model. Measured is false when no agent reported the instance: its cost is then
// the floor alone (rows), or in utilisation the work its placement reserved (Reserved),
// else the fleet's typical instance's (Typical), else nothing.
type InstanceCost struct {
	Instance  string  `json:"instance"`
	Node      string  `json:"node,omitempty"`
	RowsPerS  float64 `json:"rows_per_s"`
	BytesPerS float64 `json:"bytes_per_s"`
	// BinlogBytesPerS is the binlog it reads from its source a second, every table's
	// (wave.binlog_bytes_per_s): reading costs CPU beyond what is published, priced at
	// its wave's binlog_byte_cores. Absent from waves that do not count it.
	BinlogBytesPerS float64 `json:"binlog_bytes_per_s,omitempty"`
	CPUShare        float64 `json:"cpu_cores"`
	CoresNow        float64 `json:"cores_now"`
	CoresPeak       float64 `json:"cores_peak"`
	Cost            float64 `json:"cost"`
	Measured        bool    `json:"measured"`
	// Reserved: not measured, it is priced at the work its pending placement reserved.
	Reserved bool `json:"reserved,omitempty"`
	// Typical: neither measured nor reserved, it is priced at the fleet's typical
	// instance (the median work of those the waves run), as a placement without a hint.
	Typical bool `json:"typical,omitempty"`
}

// Load models of a plan.
const (
	// ModelUtilisation: loads are utilisations (CPU cores over each wave's cores), each
	// instance priced at the prices the judge fitted for the wave it would run on.
	ModelUtilisation = "utilisation"
	// ModelRows: loads are rows/s plus a floor per instance, the same unit on every
	// wave: the fallback when a live wave reports no cores or no CPU to price work with.
	ModelRows = "rows"
)

// RebalanceAnswer is the judge's plan: the moves with their reasons and predicted loads
// (Plan: in utilisation, each wave's peak over now and the hours of the day, or in
// rows/s), the model and goals it planned for, every wave's load and prices, and the
// costs it planned with.
type RebalanceAnswer struct {
	Plan
	// Model is ModelUtilisation or ModelRows; ModelNote says why the plan fell back to
	// rows, or which waves it left out (WaveLoad.LeftOut), naming the waves without the
	// data.
	Model     string         `json:"model"`
	ModelNote string         `json:"model_note,omitempty"`
	Goals     RebalanceGoals `json:"goals"`
	Waves     []WaveLoad     `json:"waves"`
	Costs     []InstanceCost `json:"costs"`
	DataAsOf  time.Time      `json:"data_as_of"`
}

// RebalanceGoals are the goals a plan was made for: in the utilisation model
// MaxUtilisation and UtilisationBand, in the rows model HardMax and Band (rows/s).
type RebalanceGoals struct {
	MaxUtilisation  float64 `json:"max_utilisation"`
	UtilisationBand float64 `json:"utilisation_band"`
	// UtilisationBalance is every wave's lines as a ratio to the least the busiest wave
	// could stand at (the fleet's level): the goal the utilisation model balances by.
	UtilisationBalance float64 `json:"utilisation_balance"`
	HardMax            float64 `json:"hard_max"`
	Band               float64 `json:"band"`
	MaxMoves           int     `json:"max_moves"`
	CooldownS          float64 `json:"cooldown_s"`
}

// Plan is a rebalancing plan on the wire: the moves and the loads they predict. The
// planner (internal/rebalance) makes it; PlanOf converts.
type Plan struct {
	Moves []Move `json:"moves"`
	// Before and After are every live wave's predicted peak utilisation (rows/s in the
	// rows model) without and with the moves.
	Before map[string]float64 `json:"before"`
	After  map[string]float64 `json:"after"`
	// SpreadBefore and SpreadAfter are the highest minus the lowest live wave's load;
	// PeakBefore and PeakAfter the highest.
	SpreadBefore float64 `json:"spread_before"`
	SpreadAfter  float64 `json:"spread_after"`
	PeakBefore   float64 `json:"peak_before"`
	PeakAfter    float64 `json:"peak_after"`
	// Balanced: after the moves every goal holds; else Unmet says which goal the plan
	// could not reach and why.
	Balanced bool   `json:"balanced"`
	Unmet    string `json:"unmet,omitempty"`
	// ShareShort names the waves the share goal (best effort: Balanced does not count
	// it) left under their share of the instances, and why (cooling down until when,
	// pinned, the move limit, no move within the utilisation goals).
	ShareShort string `json:"share_short,omitempty"`
	// Search names how the plan held the waves to their lines in the utilisation model:
	// "descent" (one move at a time off the wave furthest over) or "packing" (the fewest
	// each wave must shed, the largest placed first); none in the rows model.
	Search string `json:"search,omitempty"`
	// OutOfTime: the planner's search ran out of its time budget, and the plan is what it
	// had found by then (a busy judge may plan otherwise than an idle one).
	OutOfTime bool `json:"out_of_time,omitempty"`
}

// Move is one planned move and why: the planner's, whose JSON is the wire's.
type Move = rebalance.Move

// Reasons of a move, as the planner gives them.
const (
	ReasonFailover = rebalance.ReasonFailover
	ReasonHardMax  = rebalance.ReasonHardMax
	ReasonSpread   = rebalance.ReasonSpread
	ReasonShare    = rebalance.ReasonShare
)

// PlanOf is the planner's plan on the wire; empty lists and maps are [] and {} in JSON,
// so that a client can range over them without a null check.
func PlanOf(p rebalance.Plan) Plan {
	out := Plan{Moves: slices.Clone(p.Moves), Before: p.Before, After: p.After, SpreadBefore: p.SpreadBefore,
		SpreadAfter: p.SpreadAfter, PeakBefore: p.PeakBefore, PeakAfter: p.PeakAfter, Balanced: p.Balanced, Unmet: p.Unmet,
		ShareShort: p.ShareShort, Search: p.Search, OutOfTime: p.OutOfTime}
	if out.Moves == nil {
		out.Moves = []Move{}
	}
	if out.Before == nil {
		out.Before = map[string]float64{}
	}
	if out.After == nil {
		out.After = map[string]float64{}
	}
	return out
}

// WaveLoad is one wave of a plan: its capacity, the prices the judge fitted for it, and
// its utilisation before and after the plan.
type WaveLoad struct {
	Node  string `json:"node"`
	Alive bool   `json:"alive"`
	// Cores is the host's cores (cpu.cores); 0 when its agent reports none. A wave that
	// shares its host with others (SharesHostWith, by host.info) has an equal share of
	// them, and its UtilNow its process's CPU and its part of the host's other work.
	Cores          float64  `json:"cores"`
	SharesHostWith []string `json:"shares_host_with,omitempty"`
	Prices         Prices   `json:"prices"`
	// UtilNow is the utilisation now (the host's CPU, cpu.util); PeakBefore and
	// PeakAfter the predicted peak over now and the hours of the day, without and with
	// the plan's moves (0 in the rows model, whose loads are the plan's Before and
	// After), and PeakHour the UTC hour of that peak after the moves (-1: now).
	UtilNow    float64 `json:"util_now"`
	PeakBefore float64 `json:"peak_before"`
	PeakAfter  float64 `json:"peak_after"`
	PeakHour   int     `json:"peak_hour"`
	// Instances it runs before and after the moves.
	Instances      int `json:"instances"`
	InstancesAfter int `json:"instances_after"`
	// Down says why the judge's view has the wave down (WaveDownNodeStale,
	// WaveDownSilent), DownNote since when; empty when it is alive, and when a
	// balancer's request (POST) said it is not. A wave a POST has alive but the judge
	// down is left out of the plan (LeftOut "no recent figures").
	Down     string `json:"down,omitempty"`
	DownNote string `json:"down_note,omitempty"`
	// LeftOut says why a live wave was left out of a plan ("no cpu.cores", "no prices"
	// in utilisation; "no recent figures": the balancer has it alive, the judge down):
	// its instances stay, it takes none; empty when planned.
	LeftOut string `json:"left_out,omitempty"`
	// ReservedCores are the cores of placements pending on the wave (reservations)
	// whose instances the plan does not have: its base counts them.
	ReservedCores float64 `json:"reserved_cores,omitempty"`
}

// WaveStatus is what the judge makes of a node's wave (GET /v1/nodes, "wave"; absent for
// a node that has reported no wave.* series: an agent-only host). A node's liveness is
// its agent's batches, its wave's the wave.* series among them: when the wave process
// dies and its host stays up, the agent goes on sending the host's figures without the
// wave's, and the node stays live while its wave is down.
type WaveStatus struct {
	Live bool `json:"live"`
	// LastSeen is when the wave's last metrics reached the judge (the agent's last
	// scrape of the wave that answered), on the judge's clock: its batch's timestamp
	// plus the node's offset in whole seconds, so that no later batch moves it.
	LastSeen time.Time `json:"last_seen"`
	Down     string    `json:"down,omitempty"`
	DownNote string    `json:"down_note,omitempty"`
}

// Why a wave is down in the judge's view: the same staleness window (placement.
// stale_intervals of the node's interval) over the node's batches or over its wave's
// metrics among them.
const (
	// WaveDownNodeStale: the node's batches stopped (its host or its agent is down).
	WaveDownNodeStale = "node_stale"
	// WaveDownSilent: the wave's metrics stopped while its host's batches go on (the
	// wave process is down, or its agent can no longer scrape it).
	WaveDownSilent = "wave_silent"
)

// NodeLoad is a wave node's load in the utilisation model (GET /v1/nodes/{id}, "load"):
// its cores, its prices, its utilisation now and its predicted peak over now and the
// hours of the day with the instances it runs and the cores reserved by placements onto
// it not yet running (ReservedCores; PeakHour: the UTC hour; -1: now).
type NodeLoad struct {
	Cores         float64 `json:"cores"`
	Prices        Prices  `json:"prices"`
	UtilNow       float64 `json:"util_now"`
	Peak          float64 `json:"peak"`
	PeakHour      int     `json:"peak_hour"`
	ReservedCores float64 `json:"reserved_cores,omitempty"`
	// SharesHostWith names the live waves on the same host (host.info): Cores is then
	// its equal share of the host's cores, and UtilNow its process's CPU and its part of
	// the host's other work over them.
	SharesHostWith []string `json:"shares_host_with,omitempty"`
}

// Prices are a wave's costs of work in CPU cores, fitted to the CPU its wave process
// used (wave.cpu_cores) against the rows and bytes it published: per row/s, per byte/s,
// and the base the process costs with no work. Source is "fitted" (the wave's own
// samples), "pooled" (too few or too alike samples, or a fit of its own too uncertain:
// the fleet's prices at the wave's speed) or "none" (no price: Unpriced says why); Samples,
// R2 and RMSE (cores) say how well the wave's own fit explains its samples.
type Prices struct {
	RowCores  float64 `json:"row_cores"`
	ByteCores float64 `json:"byte_cores"`
	// BinlogByteCores prices a binlog byte read a second (an instance reads its source's
	// whole binlog, whatever it publishes); 0 where no agent reports the binlog read, or
	// where the fleet cannot tell reading from publishing (pooled_read_collinear).
	BinlogByteCores float64 `json:"binlog_byte_cores"`
	BaseCores       float64 `json:"base_cores"`
	// BaseNowCores is the base as the wave's latest samples show it (their CPU less what
	// their work costs at these prices, over the last thirty minutes): the base the plans
	// add to the wave's instances' costs, with its host's other work.
	BaseNowCores float64 `json:"base_now_cores"`
	Source       string  `json:"source"`
	Samples      int     `json:"samples"`
	R2           float64 `json:"r2"`
	RMSE         float64 `json:"rmse"`
	// Saturated is how many samples were left out because the wave's CPU was pegged at
	// its cores (a reading that is only a floor of what the work costs), or because its
	// prices predict it near enough to its cores that its reading stayed under them only
	// when its noise fell low.
	Saturated int `json:"saturated"`
	// WorkErr is the standard error of the wave's own fit's cost of its mean work, as a
	// share of that cost (0: no fit of its own tried; -1: its own fit cannot say, as its
	// work costs nothing at its prices or its samples are too few or collinear, so the
	// pool's prices stand in for it where there is a pool). The prices weigh the own fit by
	// 1/work_err² against the fleet's prices at the wave's speed by 1/m², m how far the
	// pool misses the waves' own fits beyond their errors (learned across the fleet):
	// "pooled" when the pool weighs more.
	WorkErr float64 `json:"work_err"`
	// CostErr is the standard error of the prices' cost of the wave's work, a share of
	// it (0: not known): the plans take a wave to stand up to this much higher than
	// predicted before calling it within its lines.
	CostErr float64 `json:"cost_err"`
	// PooledCollinear: the prices are, or lean on, the fleet's pooled prices, fitted
	// where every wave's rows and bytes move together (the same bytes per row fleet-wide):
	// the pool priced their combined work and split it between a row and a byte by their
	// spreads, a split the data cannot check (the cost at the fleet's bytes per row is
	// the fitted one whatever the split).
	PooledCollinear bool `json:"pooled_collinear,omitempty"`
	// PooledReadCollinear: the prices are, or lean on, the fleet's pooled prices, fitted
	// where the binlog every wave reads moves only with what it publishes (no instance
	// filters its source): the pool priced reading within the rows and bytes, and
	// binlog_byte_cores is 0.
	PooledReadCollinear bool `json:"pooled_read_collinear,omitempty"`
	// PooledFromFits: the prices are, or lean on, the fleet's pooled prices, and the
	// pooled fit found no cost of work across the fleet: they are the median of the
	// prices the waves' own fits found.
	PooledFromFits bool `json:"pooled_from_fits,omitempty"`
	// Unpriced says why, when source is "none": no wave reports wave.cpu_cores, none has
	// enough samples yet, or the fleet's pooled fit found no cost of work.
	Unpriced string `json:"unpriced,omitempty"`
	// PooledWhy says why, when source is "pooled": no samples of the wave's own (its
	// speed unknown), too few (so many of so many), work that has not varied, or an own
	// fit that weighs less than the fleet's prices.
	PooledWhy string `json:"pooled_why,omitempty"`
}

// MetricNames are the metric names the judge has seen (GET /v1/metric-names): every
// series of the current hour and of the last historical refresh, sorted, each once.
// An alarm's check warns of a policy whose metric is not among them (nor canonical).
type MetricNames struct {
	Names          []string   `json:"names"`
	Hour           time.Time  `json:"hour"`
	HistoricalAsOf *time.Time `json:"historical_as_of,omitempty"`
}
