package alarm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/coord"
)

// Matcher matches one label of an alert, in Alertmanager's silence shape.
type Matcher struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	IsRegex bool   `json:"isRegex"`
	// IsEqual false negates the matcher; true when omitted.
	IsEqual *bool `json:"isEqual,omitempty"`

	re *regexp.Regexp
}

func (m *Matcher) compile() error {
	if !policy.ValidLabelName(m.Name) {
		return fmt.Errorf("matcher name %q: want a label name like node or alertname", m.Name)
	}
	if len(m.Value) > 1024 {
		return fmt.Errorf("matcher %s: value longer than 1024 bytes", m.Name)
	}
	if m.IsRegex {
		re, err := regexp.Compile("^(?:" + m.Value + ")$")
		if err != nil {
			return fmt.Errorf("matcher %s: bad regular expression: %v", m.Name, err)
		}
		m.re = re
	}
	return nil
}

func (m *Matcher) matches(labels map[string]string) bool {
	v := labels[m.Name]
	var ok bool
	if m.re != nil {
		ok = m.re.MatchString(v)
	} else {
		ok = v == m.Value
	}
	if m.IsEqual != nil && !*m.IsEqual {
		return !ok
	}
	return ok
}

// needsValue reports whether m matches only a label that has a value: an alert without
// the label (its value "") never matches it.
func (m *Matcher) needsValue() bool {
	if m.IsEqual != nil && !*m.IsEqual {
		return false
	}
	if m.IsRegex {
		return m.re != nil && !m.re.MatchString("")
	}
	return m.Value != ""
}

// Unmatchable says, for each policy the silence names by an exact alertname matcher,
// which of its matchers want a label the policy's alerts never carry (one its by
// leaves out): the silence mutes none of them. Nil when there is none.
func (s *Silence) Unmatchable(ps []*policy.Policy) []string {
	var out []string
	for _, m := range s.Matchers {
		if m.Name != policy.LabelAlertName || m.IsRegex || (m.IsEqual != nil && !*m.IsEqual) {
			continue
		}
		for _, p := range ps {
			if p.Name != m.Value {
				continue
			}
			for _, o := range s.Matchers {
				if o.needsValue() && !p.Carries(o.Name) {
					out = append(out, fmt.Sprintf("policy %s's alerts have no label %s (its by: [%s]): this silence mutes none of them",
						p.Name, o.Name, strings.Join(p.By, ", ")))
				}
			}
		}
	}
	return out
}

// Silence mutes the notifications of every alert all of whose matchers match, between
// StartsAt and EndsAt.
type Silence struct {
	ID        string    `json:"id"`
	Matchers  []Matcher `json:"matchers"`
	StartsAt  time.Time `json:"startsAt"`
	EndsAt    time.Time `json:"endsAt"`
	CreatedBy string    `json:"createdBy"`
	Comment   string    `json:"comment"`
}

// Silence states.
const (
	SilenceActive  = "active"
	SilencePending = "pending"
	SilenceExpired = "expired"
)

// State is the silence's state at t.
func (s *Silence) State(t time.Time) string {
	switch {
	case t.Before(s.StartsAt):
		return SilencePending
	case t.Before(s.EndsAt):
		return SilenceActive
	default:
		return SilenceExpired
	}
}

// Validate compiles the matchers and checks the times.
func (s *Silence) Validate() error {
	if len(s.Matchers) == 0 {
		return errors.New("a silence needs at least one matcher")
	}
	if len(s.Matchers) > 64 {
		return errors.New("at most 64 matchers")
	}
	matchesEmpty := true
	for i := range s.Matchers {
		if err := s.Matchers[i].compile(); err != nil {
			return err
		}
		if !s.Matchers[i].matches(map[string]string{}) {
			matchesEmpty = false
		}
	}
	if matchesEmpty {
		// A silence that matches the empty label set matches every alert.
		return errors.New("the matchers match every alert; name at least one label value")
	}
	if s.EndsAt.IsZero() {
		return errors.New("endsAt (or duration) is required")
	}
	if !s.EndsAt.After(s.StartsAt) {
		return errors.New("endsAt must be after startsAt")
	}
	if s.EndsAt.UTC().Year() > 9999 {
		// JSON's times end there: storing it failed (a 500) and the silence was lost.
		return fmt.Errorf("endsAt is past the year 9999 (%d)", s.EndsAt.UTC().Year())
	}
	if len(s.CreatedBy) > 256 || len(s.Comment) > 4096 {
		return errors.New("createdBy (256) or comment (4096 bytes) too long")
	}
	return nil
}

// Silences are kept in one coordinator value, so every alarm process shares them; each
// process caches them, reloads the cache when the coordinator says the value changed
// (Watch), and periodically in case a change went unseen.
type Silences struct {
	c   coord.Coordinator
	key string
	now func() time.Time

	// writing orders the loads and writes of the cache: a load that began before
	// another's write cannot put the older list back after it. A one-slot semaphore,
	// not a mutex, so that a caller's deadline also bounds its wait for a load that a
	// coordinator out of reach holds (a silence's POST then answers 503 in time).
	writing chan struct{}
	mu      sync.RWMutex
	list    []Silence
}

// refreshTimeout bounds a reload of the silences: a coordinator that does not answer
// must not hold the evaluation's timer, nor the writes waiting behind the reload.
const refreshTimeout = 10 * time.Second

// order waits for the turn to load or write the silences, or for ctx to end.
func (s *Silences) order(ctx context.Context) (release func(), err error) {
	select {
	case s.writing <- struct{}{}:
		return func() { <-s.writing }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("silences: %w", ctx.Err())
	}
}

// DefaultSilenceKey is the coordinator key of the silences.
const DefaultSilenceKey = "alarm/silences"

// maxSilences bounds the stored list (a coordinator value is at most 1 MB).
const maxSilences = 1000

// errSilencesCorrupt marks a stored list of silences that cannot be read.
var errSilencesCorrupt = errors.New("silences: stored value is corrupt")

// ErrSilenceNotFound is returned for an unknown silence id.
var ErrSilenceNotFound = errors.New("silence not found")

// NewSilences returns the silences kept under key (DefaultSilenceKey when empty).
func NewSilences(c coord.Coordinator, key string, now func() time.Time) *Silences {
	if key == "" {
		key = DefaultSilenceKey
	}
	if now == nil {
		now = time.Now
	}
	return &Silences{c: c, key: key, now: now, writing: make(chan struct{}, 1)}
}

type silenceDoc struct {
	Silences []Silence `json:"silences"`
}

func (s *Silences) load(ctx context.Context) ([]Silence, int64, error) {
	v, err := s.c.Get(ctx, s.key)
	if errors.Is(err, coord.ErrNotFound) {
		return nil, coord.NoVersion, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("silences: %w", err)
	}
	var d silenceDoc
	if err := json.Unmarshal(v.Data, &d); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errSilencesCorrupt, err)
	}
	for i := range d.Silences {
		for j := range d.Silences[i].Matchers {
			if err := d.Silences[i].Matchers[j].compile(); err != nil {
				return nil, 0, fmt.Errorf("%w: silence %s: %w", errSilencesCorrupt, d.Silences[i].ID, err)
			}
		}
	}
	return d.Silences, v.Version, nil
}

// Refresh reloads the cache from the coordinator, within refreshTimeout.
func (s *Silences) Refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	release, err := s.order(ctx)
	if err != nil {
		return err
	}
	defer release()
	list, _, err := s.load(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.list = list
	s.mu.Unlock()
	return nil
}

// Watch reloads the cache whenever the coordinator says the silences changed, and every
// `every` in case a change went unseen, until ctx ends: a silence created or expired
// through another alarm process applies here within moments, not at the next periodic
// reload. Off the evaluation's timer, so that a coordinator that does not answer holds
// no evaluation. A watch that cannot be set says so once; the periodic reload goes on.
func (s *Silences) Watch(ctx context.Context, every time.Duration, log *slog.Logger) {
	ch, err := s.c.WatchValue(ctx, s.key)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		log.Warn("silences: cannot watch the stored list; it is reloaded periodically only", "err", err)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				ch = nil // the watch ended (the coordinator closed): the ticker goes on
				continue
			}
		case <-t.C:
		case <-ctx.Done():
			return
		}
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			log.Warn("silences: reload failed; keeping the cached ones", "err", err)
		}
	}
}

// update applies f to the stored list with compare-and-set, retrying on conflicts.
func (s *Silences) update(ctx context.Context, f func([]Silence) ([]Silence, error)) error {
	release, err := s.order(ctx)
	if err != nil {
		return err
	}
	defer release()
	for range 10 {
		list, ver, err := s.load(ctx)
		if err != nil {
			return err
		}
		// Silences expired for a day are dropped as a side effect of every write.
		cut := s.now().Add(-24 * time.Hour)
		list = slices.DeleteFunc(list, func(x Silence) bool { return x.EndsAt.Before(cut) })
		list, err = f(list)
		if err != nil {
			return err
		}
		data, err := json.Marshal(silenceDoc{Silences: list})
		if err != nil {
			return fmt.Errorf("silences: encode: %w", err)
		}
		_, err = s.c.Put(ctx, s.key, data, ver)
		if errors.Is(err, coord.ErrVersionConflict) || errors.Is(err, coord.ErrExists) {
			continue
		}
		if err != nil {
			return fmt.Errorf("silences: %w", err)
		}
		s.mu.Lock()
		s.list = list
		s.mu.Unlock()
		return nil
	}
	return errors.New("silences: too many concurrent updates; try again")
}

// Create validates and stores a new silence (its ID is assigned) and returns it.
func (s *Silences) Create(ctx context.Context, x Silence) (Silence, error) {
	if x.StartsAt.IsZero() {
		x.StartsAt = s.now()
	}
	if err := x.Validate(); err != nil {
		return x, fmt.Errorf("%w: %w", ErrInvalidSilence, err)
	}
	if now := s.now(); !x.EndsAt.After(now) {
		// It would silence nothing, and the listing leaves expired silences out: its id
		// would name nothing the caller can see.
		return x, fmt.Errorf("%w: endsAt %s has passed (now %s)", ErrInvalidSilence, x.EndsAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	var b [8]byte
	rand.Read(b[:])
	x.ID = hex.EncodeToString(b[:])
	x.StartsAt, x.EndsAt = x.StartsAt.UTC(), x.EndsAt.UTC()
	err := s.update(ctx, func(list []Silence) ([]Silence, error) {
		if len(list) >= maxSilences {
			return nil, fmt.Errorf("%w: %d silences stored, at most %d", ErrInvalidSilence, len(list), maxSilences)
		}
		return append(list, x), nil
	})
	return x, err
}

// ErrInvalidSilence marks a silence the API refuses.
var ErrInvalidSilence = errors.New("invalid silence")

// Delete removes a silence.
func (s *Silences) Delete(ctx context.Context, id string) error {
	return s.update(ctx, func(list []Silence) ([]Silence, error) {
		n := len(list)
		list = slices.DeleteFunc(list, func(x Silence) bool { return x.ID == id })
		if len(list) == n {
			return nil, ErrSilenceNotFound
		}
		return list, nil
	})
}

// List returns the cached silences.
func (s *Silences) List() []Silence {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.list)
}

// Match returns the ids of the silences active at t that match labels.
func (s *Silences) Match(labels map[string]string, t time.Time) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var ids []string
outer:
	for i := range s.list {
		x := &s.list[i]
		if x.State(t) != SilenceActive {
			continue
		}
		for j := range x.Matchers {
			if !x.Matchers[j].matches(labels) {
				continue outer
			}
		}
		ids = append(ids, x.ID)
	}
	return ids
}
