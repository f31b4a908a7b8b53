package wave

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/binlake/binlake/internal/metric/waveprom"
)

// An instance's counters show 0 from the moment its wave leads it, and the balancer's
// fallbacks from the start: a counter that appears at its first count hides that count
// from increase() (an alert on one failed publish never fired) and leaves dashboards
// with "No data" where 0 was meant.
func TestCountersStartAtZero(t *testing.T) {
	m := newMetrics()
	m.track("orders")
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		waveprom.PublishErrors + `{instance="orders"} 0`,
		waveprom.RowsPublished + `{instance="orders"} 0`,
		`binlake_wave_messages_skipped_total{instance="orders"} 0`,
		`binlake_wave_source_errors_total{instance="orders"} 0`,
		`binlake_wave_balancer_fallbacks_total{reason="judge_error"} 0`,
		`binlake_wave_balancer_fallbacks_total{reason="no_judge"} 0`,
	} {
		if !strings.Contains(text.String(), "\n"+want+"\n") {
			t.Errorf("no %s in the scrape", want)
		}
	}
}
