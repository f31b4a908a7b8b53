// Package dashboards holds the Grafana and Kibana dashboards over the judge's
// Elasticsearch indices (grafana/, kibana/). It has no code: its tests check that every
// file parses, that every field a panel queries is in the index mapping the judge's
// elastic store installs, and that every metric name a panel selects is one the agent
// emits, so that renaming a metric or a field breaks the build instead of a dashboard.
// The Grafana files are also checked against Grafana's dashboard model as
// github.com/grafana/grafana-foundation-sdk/go defines it (grafana_model_test.go): strict
// decoding, enumeration values, and a re-encoding that keeps every key of the file.
package dashboards
