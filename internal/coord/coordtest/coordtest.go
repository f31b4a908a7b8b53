// Package coordtest is the conformance suite every coord.Coordinator passes.
//
// An implementation's test calls Run with a constructor. newCoord(t) must open a new
// coordinator on the backend of test t: successive calls within one test share the backend
// (the same file, the same ZooKeeper server), so a value written through one instance is
// read through the next. The suite closes what it opens. The suite never holds two
// coordinators on one backend at once, because the single-process coordinator locks its file;
// tests needing concurrent instances live with the implementation.
//
// Each test works under its own unique key prefix, so a shared server can hold leftovers
// of earlier runs without disturbing this one.
package coordtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/internal/keypath"
)

// wait bounds every blocking step; generous, since a loaded 2-core machine is slow.
const wait = 20 * time.Second

// notYet is how long the suite watches for something that must not happen (a second
// candidate winning while the first still leads). It can only make the suite pass wrongly
// if an implementation is slower than this to do the wrong thing, never fail a correct one.
const notYet = 300 * time.Millisecond

var seq atomic.Int64

// Run runs the conformance suite against the coordinators newCoord opens.
func Run(t *testing.T, newCoord func(t *testing.T) coord.Coordinator) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"PutGetCreate", testPutGetCreate},
		{"CompareAndSet", testCompareAndSet},
		{"AnyVersion", testAnyVersion},
		{"Delete", testDelete},
		{"DataRoundTrip", testDataRoundTrip},
		{"DataLimit", testDataLimit},
		{"List", testList},
		{"InvalidKeys", testInvalidKeys},
		{"ValuesSurviveReopen", testValuesSurviveReopen},
		{"UseAfterClose", testUseAfterClose},
		{"RegisterMembers", testRegisterMembers},
		{"MemberLeavesWithContext", testMemberLeavesWithContext},
		{"MemberLeavesOnClose", testMemberLeavesOnClose},
		{"WatchMembers", testWatchMembers},
		{"WatchValue", testWatchValue},
		{"CampaignLeaderResign", testCampaignLeaderResign},
		{"SecondCandidateWaits", testSecondCandidateWaits},
		{"CampaignContextCancel", testCampaignContextCancel},
		{"LeadershipEndsOnClose", testLeadershipEndsOnClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &suite{t: t, newCoord: newCoord}
			s.prefix = fmt.Sprintf("coordtest/%s-%d-%d", sanitize(tc.name), time.Now().UnixNano(), seq.Add(1))
			tc.fn(t, s)
		})
	}
}

type suite struct {
	t        *testing.T
	newCoord func(t *testing.T) coord.Coordinator
	prefix   string
	cleaned  bool
}

// open opens a coordinator that the test closes at its end. The first one opened also
// removes the test's prefix at the end (best effort), before it is closed.
func (s *suite) open() coord.Coordinator {
	s.t.Helper()
	c := s.newCoord(s.t)
	if c == nil {
		s.t.Fatal("newCoord returned nil")
	}
	s.t.Cleanup(func() { _ = c.Close() })
	if !s.cleaned {
		s.cleaned = true
		s.t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			// The coordinator may already be closed by the test; then nothing is removed,
			// which only leaves a uniquely named prefix behind.
			_ = c.Delete(ctx, s.prefix, coord.AnyVersion)
		})
	}
	return c
}

func (s *suite) key(parts ...string) string {
	k := s.prefix
	for _, p := range parts {
		k += "/" + p
	}
	return k
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func sanitize(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

func mustGet(t *testing.T, c coord.Coordinator, key string) coord.Value {
	t.Helper()
	v, err := c.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return v
}

func mustPut(t *testing.T, c coord.Coordinator, key string, data []byte, version int64) int64 {
	t.Helper()
	v, err := c.Put(ctxT(t), key, data, version)
	if err != nil {
		t.Fatalf("Put(%q, version %d): %v", key, version, err)
	}
	return v
}

func requireValue(t *testing.T, c coord.Coordinator, key string, data []byte, version int64) {
	t.Helper()
	got := mustGet(t, c, key)
	if !bytes.Equal(got.Data, data) || got.Version != version {
		t.Fatalf("Get(%q) = {%q, version %d}, want {%q, version %d}", key, got.Data, got.Version, data, version)
	}
}

func requireIs(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

func testPutGetCreate(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	key := s.key("a")

	_, err := c.Get(ctx, key)
	requireIs(t, "Get of a missing key", err, coord.ErrNotFound)

	v1 := mustPut(t, c, key, []byte("one"), coord.NoVersion)
	if v1 < 0 {
		t.Fatalf("Put returned version %d, want >= 0", v1)
	}
	requireValue(t, c, key, []byte("one"), v1)

	_, err = c.Put(ctx, key, []byte("two"), coord.NoVersion)
	requireIs(t, "creating an existing key", err, coord.ErrVersionConflict)
	requireValue(t, c, key, []byte("one"), v1)

	// A nested key is created with its parents as needed.
	deep := s.key("x", "y", "z")
	vd := mustPut(t, c, deep, []byte("deep"), coord.NoVersion)
	requireValue(t, c, deep, []byte("deep"), vd)
}

func testCompareAndSet(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	key := s.key("cas")

	v1 := mustPut(t, c, key, []byte("v1"), coord.NoVersion)
	v2 := mustPut(t, c, key, []byte("v2"), v1)
	if v2 == v1 {
		t.Fatalf("a successful compare-and-set kept version %d", v1)
	}
	requireValue(t, c, key, []byte("v2"), v2)

	// The writer that read v1 lost the race: its write must fail and change nothing.
	_, err := c.Put(ctx, key, []byte("stale"), v1)
	requireIs(t, "Put with a stale version", err, coord.ErrVersionConflict)
	requireValue(t, c, key, []byte("v2"), v2)

	_, err = c.Put(ctx, key, []byte("future"), v2+100)
	requireIs(t, "Put with a version never reached", err, coord.ErrVersionConflict)
	requireValue(t, c, key, []byte("v2"), v2)

	_, err = c.Put(ctx, s.key("missing"), []byte("x"), v1)
	requireIs(t, "Put with a version to a missing key", err, coord.ErrVersionConflict)
	_, err = c.Get(ctx, s.key("missing"))
	requireIs(t, "Get after a failed compare-and-set on a missing key", err, coord.ErrNotFound)

	v3 := mustPut(t, c, key, []byte("v3"), v2)
	seen := map[int64]bool{v1: true, v2: true}
	if seen[v3] {
		t.Fatalf("versions repeat: %d after %d, %d", v3, v1, v2)
	}
	requireValue(t, c, key, []byte("v3"), v3)
}

func testAnyVersion(t *testing.T, s *suite) {
	c := s.open()
	key := s.key("any")

	// AnyVersion creates a missing key…
	v1 := mustPut(t, c, key, []byte("a"), coord.AnyVersion)
	requireValue(t, c, key, []byte("a"), v1)
	// …and overwrites an existing one whatever its version.
	v2 := mustPut(t, c, key, []byte("b"), coord.AnyVersion)
	if v2 == v1 {
		t.Fatalf("an unconditional Put kept version %d", v1)
	}
	requireValue(t, c, key, []byte("b"), v2)
	// The version it returns is usable for the next compare-and-set.
	v3 := mustPut(t, c, key, []byte("c"), v2)
	requireValue(t, c, key, []byte("c"), v3)
}

func testDelete(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	key := s.key("del")

	requireIs(t, "Delete of a missing key", c.Delete(ctx, key, coord.AnyVersion), coord.ErrNotFound)

	v1 := mustPut(t, c, key, []byte("1"), coord.NoVersion)
	v2 := mustPut(t, c, key, []byte("2"), v1)
	requireIs(t, "Delete with a stale version", c.Delete(ctx, key, v1), coord.ErrVersionConflict)
	requireValue(t, c, key, []byte("2"), v2)

	if err := c.Delete(ctx, key, v2); err != nil {
		t.Fatalf("Delete with the current version: %v", err)
	}
	_, err := c.Get(ctx, key)
	requireIs(t, "Get after Delete", err, coord.ErrNotFound)
	requireIs(t, "second Delete", c.Delete(ctx, key, coord.AnyVersion), coord.ErrNotFound)

	// A deleted key can be created again.
	v := mustPut(t, c, key, []byte("again"), coord.NoVersion)
	requireValue(t, c, key, []byte("again"), v)
	if err := c.Delete(ctx, key, coord.AnyVersion); err != nil {
		t.Fatalf("Delete with AnyVersion: %v", err)
	}
	_, err = c.Get(ctx, key)
	requireIs(t, "Get after Delete with AnyVersion", err, coord.ErrNotFound)
}

func testDataRoundTrip(t *testing.T, s *suite) {
	c := s.open()
	big := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"json", []byte(`{"file":"bin.000001","pos":4,"gtid_set":"0-1-202"}`)},
		{"binary", bin},
		{"utf8", []byte("séance 訂單 ✓")},
		{"64KiB", big},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := s.key("data", tc.name)
			v := mustPut(t, c, key, tc.data, coord.NoVersion)
			got := mustGet(t, c, key)
			if !bytes.Equal(got.Data, tc.data) {
				t.Fatalf("Get returned %d bytes that differ from the %d put", len(got.Data), len(tc.data))
			}
			if got.Version != v {
				t.Fatalf("Get version %d, Put returned %d", got.Version, v)
			}
		})
	}
}

// testDataLimit: data up to keypath.MaxData is stored; larger data is refused with an
// error, and the refusal costs nothing (on ZooKeeper an oversized request would drop the
// connection and with it the session's leaderships).
func testDataLimit(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	l, err := c.Campaign(ctx, s.key("leader"), nil)
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	atLimit := bytes.Repeat([]byte{'x'}, keypath.MaxData)
	v := mustPut(t, c, s.key("big"), atLimit, coord.NoVersion)
	if got := mustGet(t, c, s.key("big")); !bytes.Equal(got.Data, atLimit) || got.Version != v {
		t.Fatalf("a value of %d bytes did not round-trip (got %d bytes)", len(atLimit), len(got.Data))
	}

	tooBig := append(atLimit, 'y')
	if _, err := c.Put(ctx, s.key("too-big"), tooBig, coord.AnyVersion); err == nil || errors.Is(err, coord.ErrVersionConflict) {
		t.Fatalf("Put of %d bytes = %v, want a size error", len(tooBig), err)
	}
	_, err = c.Get(ctx, s.key("too-big"))
	requireIs(t, "Get after a refused Put", err, coord.ErrNotFound)
	if err := c.Register(ctx, s.key("waves"), coord.Member{ID: "m", Data: tooBig}); err == nil {
		t.Fatalf("Register with %d bytes of data succeeded", len(tooBig))
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if l2, err := c.Campaign(cctx, s.key("other-leader"), tooBig); err == nil {
		_ = l2.Resign(ctx)
		t.Fatalf("Campaign with %d bytes of data succeeded", len(tooBig))
	}
	requireOpen(t, "after refused oversized requests", l)
	requireValue(t, c, s.key("big"), atLimit, v)
	if err := l.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
}

func testList(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	dir := s.key("list")

	names, err := c.List(ctx, s.key("nothing-here"))
	if err != nil || len(names) != 0 {
		t.Fatalf("List of a missing key = %q, %v; want empty, nil", names, err)
	}

	for _, k := range []string{"c", "a", "b/deep", "b/deeper/still"} {
		mustPut(t, c, dir+"/"+k, []byte(k), coord.AnyVersion)
	}
	names, err = c.List(ctx, dir)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(names, want) {
		t.Fatalf("List(%q) = %q, want %q", dir, names, want)
	}
	names, err = c.List(ctx, dir+"/b")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if want := []string{"deep", "deeper"}; !slices.Equal(names, want) {
		t.Fatalf("List(%q) = %q, want %q", dir+"/b", names, want)
	}

	// Deleting a key removes what is nested under it.
	if err := c.Delete(ctx, dir+"/b", coord.AnyVersion); err != nil {
		t.Fatalf("Delete of a key with children: %v", err)
	}
	_, err = c.Get(ctx, dir+"/b/deeper/still")
	requireIs(t, "Get of a child of a deleted key", err, coord.ErrNotFound)
	names, err = c.List(ctx, dir)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if want := []string{"a", "c"}; !slices.Equal(names, want) {
		t.Fatalf("List after Delete = %q, want %q", names, want)
	}
}

func testInvalidKeys(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	for _, key := range []string{"", "/abs", s.prefix + "/", s.prefix + "//x", s.prefix + "/../x", s.prefix + "/./x", s.prefix + "/nul\x00x", s.prefix + "/bad\xffutf8"} {
		t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
			if _, err := c.Put(ctx, key, []byte("x"), coord.AnyVersion); err == nil {
				t.Errorf("Put(%q) accepted an invalid key", key)
			}
			if _, err := c.Get(ctx, key); err == nil || errors.Is(err, coord.ErrNotFound) {
				t.Errorf("Get(%q) = %v, want an invalid-key error", key, err)
			}
			if err := c.Delete(ctx, key, coord.AnyVersion); err == nil || errors.Is(err, coord.ErrNotFound) {
				t.Errorf("Delete(%q) = %v, want an invalid-key error", key, err)
			}
			if _, err := c.List(ctx, key); err == nil {
				t.Errorf("List(%q) accepted an invalid key", key)
			}
			if _, err := c.Leader(ctx, key); err == nil || errors.Is(err, coord.ErrNotFound) {
				t.Errorf("Leader(%q) = %v, want an invalid-key error", key, err)
			}
			cctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			if l, err := c.Campaign(cctx, key, nil); err == nil {
				_ = l.Resign(ctx)
				t.Errorf("Campaign(%q) accepted an invalid key", key)
			}
			if err := c.Register(ctx, key, coord.Member{ID: "m"}); err == nil {
				t.Errorf("Register(group %q) accepted an invalid group", key)
			}
		})
	}
	for _, id := range []string{"", "a/b", ".", "..", "x\x00"} {
		if err := c.Register(ctx, s.key("g"), coord.Member{ID: id}); err == nil {
			t.Errorf("Register accepted the invalid member id %q", id)
		}
	}
}

func testValuesSurviveReopen(t *testing.T, s *suite) {
	c1 := s.open()
	key := s.key("persist")
	v1 := mustPut(t, c1, key, []byte("kept"), coord.NoVersion)
	v2 := mustPut(t, c1, key, []byte("kept twice"), v1)
	other := s.key("persist-other")
	vo := mustPut(t, c1, other, []byte("other"), coord.NoVersion)
	if err := c1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	c2 := s.open()
	requireValue(t, c2, key, []byte("kept twice"), v2)
	requireValue(t, c2, other, []byte("other"), vo)
	// Versions survive too: the old version is still stale, the current one still works.
	_, err := c2.Put(ctxT(t), key, []byte("stale"), v1)
	requireIs(t, "Put with a version from before the reopen", err, coord.ErrVersionConflict)
	v3 := mustPut(t, c2, key, []byte("after reopen"), v2)
	requireValue(t, c2, key, []byte("after reopen"), v3)
}

func testUseAfterClose(t *testing.T, s *suite) {
	c := s.open()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := ctxT(t)
	key := s.key("closed")
	_, err := c.Get(ctx, key)
	requireIs(t, "Get after Close", err, coord.ErrClosed)
	_, err = c.Put(ctx, key, nil, coord.AnyVersion)
	requireIs(t, "Put after Close", err, coord.ErrClosed)
	requireIs(t, "Delete after Close", c.Delete(ctx, key, coord.AnyVersion), coord.ErrClosed)
	_, err = c.List(ctx, key)
	requireIs(t, "List after Close", err, coord.ErrClosed)
	requireIs(t, "Register after Close", c.Register(ctx, key, coord.Member{ID: "m"}), coord.ErrClosed)
	_, err = c.Members(ctx, key)
	requireIs(t, "Members after Close", err, coord.ErrClosed)
	_, err = c.WatchMembers(ctx, key)
	requireIs(t, "WatchMembers after Close", err, coord.ErrClosed)
	_, err = c.Campaign(ctx, key, nil)
	requireIs(t, "Campaign after Close", err, coord.ErrClosed)
	_, err = c.Leader(ctx, key)
	requireIs(t, "Leader after Close", err, coord.ErrClosed)
}

func ids(ms []coord.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// eventuallyMembers polls Members until it lists exactly want (by ID).
func eventuallyMembers(t *testing.T, c coord.Coordinator, group string, want []string) []coord.Member {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		ms, err := c.Members(ctxT(t), group)
		if err != nil {
			t.Fatalf("Members(%q): %v", group, err)
		}
		if slices.Equal(ids(ms), want) {
			return ms
		}
		if time.Now().After(deadline) {
			t.Fatalf("Members(%q) = %q, want %q within %v", group, ids(ms), want, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testRegisterMembers(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	group := s.key("waves")

	ms, err := c.Members(ctx, group)
	if err != nil || len(ms) != 0 {
		t.Fatalf("Members of an empty group = %v, %v; want none", ms, err)
	}
	// Registered out of order, listed sorted by ID, with their data.
	for _, m := range []coord.Member{{ID: "wave-2", Data: []byte(`{"addr":"b"}`)}, {ID: "wave-1", Data: []byte(`{"addr":"a"}`)}} {
		if err := c.Register(ctx, group, m); err != nil {
			t.Fatalf("Register(%s): %v", m.ID, err)
		}
	}
	ms, err = c.Members(ctx, group)
	if err != nil {
		t.Fatalf("Members: %v", err)
	}
	want := []coord.Member{{ID: "wave-1", Data: []byte(`{"addr":"a"}`)}, {ID: "wave-2", Data: []byte(`{"addr":"b"}`)}}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("Members = %+v, want %+v", ms, want)
	}

	err = c.Register(ctx, group, coord.Member{ID: "wave-1", Data: []byte("impostor")})
	requireIs(t, "registering a live id twice", err, coord.ErrExists)
	ms, _ = c.Members(ctx, group)
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("a refused registration changed the members: %+v", ms)
	}

	// Groups are independent.
	other := s.key("alarms")
	if err := c.Register(ctx, other, coord.Member{ID: "wave-1"}); err != nil {
		t.Fatalf("the same id in another group: %v", err)
	}
	eventuallyMembers(t, c, other, []string{"wave-1"})
}

func testMemberLeavesWithContext(t *testing.T, s *suite) {
	c := s.open()
	group := s.key("waves")
	mctx, cancel := context.WithCancel(ctxT(t))
	if err := c.Register(mctx, group, coord.Member{ID: "short"}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := c.Register(ctxT(t), group, coord.Member{ID: "long"}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	eventuallyMembers(t, c, group, []string{"long", "short"})
	cancel()
	eventuallyMembers(t, c, group, []string{"long"})

	// Once gone, the id may register again.
	if err := c.Register(ctxT(t), group, coord.Member{ID: "short", Data: []byte("back")}); err != nil {
		t.Fatalf("Register after the first registration ended: %v", err)
	}
	ms := eventuallyMembers(t, c, group, []string{"long", "short"})
	if string(ms[1].Data) != "back" {
		t.Fatalf("re-registered member has data %q, want %q", ms[1].Data, "back")
	}
}

func testMemberLeavesOnClose(t *testing.T, s *suite) {
	c1 := s.open()
	group := s.key("waves")
	if err := c1.Register(ctxT(t), group, coord.Member{ID: "closing"}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	eventuallyMembers(t, c1, group, []string{"closing"})
	if err := c1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	c2 := s.open()
	eventuallyMembers(t, c2, group, []string{})
	// The id is free again.
	if err := c2.Register(ctxT(t), group, coord.Member{ID: "closing"}); err != nil {
		t.Fatalf("Register after the first coordinator closed: %v", err)
	}
	eventuallyMembers(t, c2, group, []string{"closing"})
}

// nextList reads watch updates until one lists exactly want.
func nextList(t *testing.T, ch <-chan []coord.Member, want []string) []coord.Member {
	t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var last []string
	for {
		select {
		case ms, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed while waiting for %q (last %q)", want, last)
			}
			last = ids(ms)
			if slices.Equal(last, want) {
				return ms
			}
		case <-timer.C:
			t.Fatalf("watch did not report %q within %v (last %q)", want, wait, last)
		}
	}
}

func testWatchMembers(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	group := s.key("waves")
	if err := c.Register(ctx, group, coord.Member{ID: "a", Data: []byte("A")}); err != nil {
		t.Fatalf("Register: %v", err)
	}

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ch, err := c.WatchMembers(wctx, group)
	if err != nil {
		t.Fatalf("WatchMembers: %v", err)
	}
	// The first message is the current list.
	select {
	case ms, ok := <-ch:
		if !ok {
			t.Fatal("watch closed before the first list")
		}
		if want := []coord.Member{{ID: "a", Data: []byte("A")}}; !reflect.DeepEqual(ms, want) {
			t.Fatalf("first list = %+v, want %+v", ms, want)
		}
	case <-time.After(wait):
		t.Fatalf("no first list within %v", wait)
	}

	bctx, leaveB := context.WithCancel(ctx)
	if err := c.Register(bctx, group, coord.Member{ID: "b", Data: []byte("B")}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	ms := nextList(t, ch, []string{"a", "b"})
	if string(ms[1].Data) != "B" {
		t.Fatalf("watched member b has data %q", ms[1].Data)
	}
	leaveB()
	nextList(t, ch, []string{"a"})

	// A watch of a group nobody joined yet starts empty and sees the first member.
	ech, err := c.WatchMembers(wctx, s.key("empty"))
	if err != nil {
		t.Fatalf("WatchMembers of an empty group: %v", err)
	}
	nextList(t, ech, []string{})
	if err := c.Register(ctx, s.key("empty"), coord.Member{ID: "first"}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	nextList(t, ech, []string{"first"})

	// Ending the watch's ctx closes its channel.
	stop()
	requireClosedSoon(t, ch, ech)
}

// requireClosedSoon drains each watch until it closes, as it must soon after its ctx ended.
func requireClosedSoon[T any](t *testing.T, chans ...<-chan T) {
	t.Helper()
	for _, w := range chans {
		timer := time.NewTimer(wait)
	drain:
		for {
			select {
			case _, ok := <-w:
				if !ok {
					break drain
				}
			case <-timer.C:
				t.Fatalf("watch channel not closed within %v of its ctx ending", wait)
			}
		}
		timer.Stop()
	}
}

// nextSignal waits for the next signal of a value watch.
func nextSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the watch closed", what)
		}
	case <-time.After(wait):
		t.Fatalf("%s: no signal within %v", what, wait)
	}
}

// noSignal asserts that the watch stays quiet for a while.
func noSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s: a signal without a change", what)
	case <-time.After(300 * time.Millisecond):
	}
}

func testWatchValue(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	key := s.key("silences")
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ch, err := c.WatchValue(wctx, key)
	if err != nil {
		t.Fatalf("WatchValue: %v", err)
	}
	nextSignal(t, ch, "the first look, the key absent")
	noSignal(t, ch, "nothing written")
	v := mustPut(t, c, key, []byte("one"), coord.NoVersion)
	nextSignal(t, ch, "created")
	mustPut(t, c, key, []byte("two"), v)
	nextSignal(t, ch, "written")
	mustPut(t, c, s.key("other"), []byte("x"), coord.NoVersion)
	noSignal(t, ch, "another key written")
	if err := c.Delete(ctx, key, coord.AnyVersion); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	nextSignal(t, ch, "deleted")

	// A value written before the watch: the first signal is the look at it.
	other, err := c.WatchValue(wctx, s.key("other"))
	if err != nil {
		t.Fatalf("WatchValue: %v", err)
	}
	nextSignal(t, other, "the first look, the key present")

	stop()
	requireClosedSoon(t, ch, other)
	if _, err := c.WatchValue(ctx, "bad//key"); err == nil {
		t.Fatal("WatchValue of an invalid key: no error")
	}
}

func requireOpen(t *testing.T, what string, l coord.Leadership) {
	t.Helper()
	select {
	case <-l.Lost():
		t.Fatalf("%s: leadership lost unexpectedly", what)
	default:
	}
}

func requireLost(t *testing.T, what string, l coord.Leadership) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(wait):
		t.Fatalf("%s: Lost not closed within %v", what, wait)
	}
}

func requireLeader(t *testing.T, c coord.Coordinator, key string, want []byte) {
	t.Helper()
	got, err := c.Leader(ctxT(t), key)
	if err != nil {
		t.Fatalf("Leader(%q): %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Leader(%q) = %q, want %q", key, got, want)
	}
}

func eventuallyNoLeader(t *testing.T, c coord.Coordinator, key string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		data, err := c.Leader(ctxT(t), key)
		if errors.Is(err, coord.ErrNotFound) {
			return
		}
		if err != nil {
			t.Fatalf("Leader(%q): %v", key, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("Leader(%q) = %q within %v, want ErrNotFound", key, data, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type campaignResult struct {
	l   coord.Leadership
	err error
}

func campaignAsync(ctx context.Context, c coord.Coordinator, key string, data []byte) <-chan campaignResult {
	ch := make(chan campaignResult, 1)
	go func() {
		l, err := c.Campaign(ctx, key, data)
		ch <- campaignResult{l, err}
	}()
	return ch
}

func testCampaignLeaderResign(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	key := s.key("instances", "orders")

	_, err := c.Leader(ctx, key)
	requireIs(t, "Leader before any campaign", err, coord.ErrNotFound)

	l1, err := c.Campaign(ctx, key, []byte("wave-1"))
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	requireOpen(t, "after Campaign", l1)
	requireLeader(t, c, key, []byte("wave-1"))

	if err := l1.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	requireLost(t, "after Resign", l1)
	if err := l1.Resign(ctx); err != nil {
		t.Fatalf("second Resign: %v", err)
	}
	eventuallyNoLeader(t, c, key)

	// Each new leader of the key gets a larger token.
	l2, err := c.Campaign(ctx, key, []byte("wave-1 again"))
	if err != nil {
		t.Fatalf("second Campaign: %v", err)
	}
	if l2.Token() <= l1.Token() {
		t.Fatalf("token %d of the second leadership is not above %d", l2.Token(), l1.Token())
	}
	requireLeader(t, c, key, []byte("wave-1 again"))

	// Another key leads independently, at the same time.
	other, err := c.Campaign(ctx, s.key("instances", "users"), []byte("wave-1"))
	if err != nil {
		t.Fatalf("Campaign on another key: %v", err)
	}
	requireOpen(t, "other key's campaign", l2)
	if err := other.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	requireOpen(t, "after another key resigned", l2)
	requireLeader(t, c, key, []byte("wave-1 again"))
	if err := l2.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
}

func testSecondCandidateWaits(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	key := s.key("instances", "orders")

	l1, err := c.Campaign(ctx, key, []byte("first"))
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	second := campaignAsync(ctx, c, key, []byte("second"))
	select {
	case r := <-second:
		t.Fatalf("second candidate returned (%v, %v) while the first leads", r.l, r.err)
	case <-time.After(notYet):
	}
	requireOpen(t, "while a second candidate waits", l1)
	requireLeader(t, c, key, []byte("first"))

	if err := l1.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	requireLost(t, "after Resign", l1)
	var r campaignResult
	select {
	case r = <-second:
	case <-time.After(wait):
		t.Fatalf("second candidate did not take over within %v of the first resigning", wait)
	}
	if r.err != nil {
		t.Fatalf("second Campaign: %v", r.err)
	}
	requireOpen(t, "new leader", r.l)
	if r.l.Token() <= l1.Token() {
		t.Fatalf("successor token %d is not above %d", r.l.Token(), l1.Token())
	}
	requireLeader(t, c, key, []byte("second"))
	if err := r.l.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
}

func testCampaignContextCancel(t *testing.T, s *suite) {
	c := s.open()
	ctx := ctxT(t)
	key := s.key("instances", "orders")

	l1, err := c.Campaign(ctx, key, []byte("first"))
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	waiting := campaignAsync(cctx, c, key, []byte("gives up"))
	select {
	case r := <-waiting:
		t.Fatalf("second candidate returned (%v, %v) while the first leads", r.l, r.err)
	case <-time.After(notYet):
	}
	cancel()
	select {
	case r := <-waiting:
		if r.err == nil {
			t.Fatal("Campaign returned leadership after its ctx was cancelled while another led")
		}
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Campaign after cancel: %v, want context.Canceled", r.err)
		}
	case <-time.After(wait):
		t.Fatalf("Campaign did not return within %v of its ctx ending", wait)
	}
	requireOpen(t, "after a waiting candidate gave up", l1)
	requireLeader(t, c, key, []byte("first"))

	// The candidate that gave up must not block the key: a new one wins as soon as the
	// leader resigns.
	if err := l1.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	next, err := c.Campaign(ctx, key, []byte("third"))
	if err != nil {
		t.Fatalf("Campaign after the leader resigned: %v", err)
	}
	requireLeader(t, c, key, []byte("third"))
	if err := next.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
}

func testLeadershipEndsOnClose(t *testing.T, s *suite) {
	c1 := s.open()
	ctx := ctxT(t)
	key := s.key("instances", "orders")

	l1, err := c1.Campaign(ctx, key, []byte("closing"))
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	if err := c1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	requireLost(t, "after Close", l1)
	// Resign after Close is harmless.
	if err := l1.Resign(ctx); err != nil && !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("Resign after Close: %v", err)
	}

	c2 := s.open()
	eventuallyNoLeader(t, c2, key)
	l2, err := c2.Campaign(ctx, key, []byte("next"))
	if err != nil {
		t.Fatalf("Campaign on a new coordinator: %v", err)
	}
	if l2.Token() <= l1.Token() {
		t.Fatalf("token %d after reopening is not above %d: fencing would accept the old leader", l2.Token(), l1.Token())
	}
	requireLeader(t, c2, key, []byte("next"))
	if err := l2.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
}
