// Package packaging holds no product code: it is the home of the tests
// for the operational assets beside it: the systemd unit, the Grafana
// dashboard and the Prometheus alert rules.
//
// The tests build the ledgerd binary from this tree, start a one-node
// `ledgerd agent -dev`, scrape its /metrics and fail if the dashboard or
// the alerts name a metric the binary does not export, so neither can
// silently go blank after a metric is renamed. They also lint the
// dashboard JSON and the rule file (structure, durations, label and
// annotation templates), and run `promtool check rules` when promtool is
// on PATH or named by $PROMTOOL.
//
// What it must not do: depend on a running Prometheus or Grafana, or on
// the network beyond loopback.
package packaging
