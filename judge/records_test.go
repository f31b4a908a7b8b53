package judge

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/store"
)

// failOnceRecords fails its first WriteRecords, once the test released it: the test
// changes records while that write is in flight.
type failOnceRecords struct {
	store.Store
	once              sync.Once
	entered, released chan struct{}
}

func (f *failOnceRecords) WriteRecords(ctx context.Context, recs []store.Record) error {
	failed := false
	f.once.Do(func() {
		close(f.entered)
		<-f.released
		failed = true
	})
	if failed {
		return errors.New("engine down")
	}
	return f.Store.WriteRecords(ctx, recs)
}

// The changes of a write the store failed are written again, except where a newer change
// of the same record came meanwhile: that one wins. Close writes what is pending.
func TestRecordMirrorRetriesWithoutUndoing(t *testing.T) {
	st := &failOnceRecords{Store: openStore(t), entered: make(chan struct{}), released: make(chan struct{})}
	m := newRecordMirror(st, store.BufferOptions{MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}, quiet)
	rec := func(key, value string) store.Record {
		return store.Record{Kind: recordReservation, Key: key, Value: []byte(value)}
	}
	m.put(rec("orders", "on wave-a"))
	m.put(rec("billing", "on wave-a"))
	m.put(rec("users", "on wave-a"))
	<-st.entered
	m.put(rec("orders", "on wave-b"))                          // placed again
	m.put(store.Record{Kind: recordReservation, Key: "users"}) // ended
	close(st.released)
	m.Close()

	recs, err := st.Records(context.Background(), recordReservation)
	require.NoError(t, err)
	got := map[string]string{}
	for _, r := range recs {
		got[r.Key] = string(r.Value)
	}
	require.Equal(t, map[string]string{"orders": "on wave-b", "billing": "on wave-a"}, got)
}
