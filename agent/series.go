package agent

import (
	"fmt"
	"time"

	"github.com/ledgerd/ledgerd/series"
)

// seriesLimits returns the limits of new standing reservations: the
// package defaults with the configured horizons.
func (c *Config) seriesLimits() series.Limits {
	lim := series.DefaultLimits()
	if c.SeriesMaxHorizon != 0 {
		lim.MaxHorizon = time.Duration(c.SeriesMaxHorizon)
	}
	if c.SeriesHorizon != 0 {
		lim.DefaultHorizon = time.Duration(c.SeriesHorizon)
	}
	lim.DefaultHorizon = min(lim.DefaultHorizon, lim.MaxHorizon)
	return lim
}

// checkSeries refuses horizons outside [1h, 366 days] (0: the default)
// and a default above the maximum.
func (c *Config) checkSeries() error {
	hardCap := series.DefaultLimits().MaxHorizon
	for _, h := range []struct {
		key string
		v   Duration
	}{{"series_horizon", c.SeriesHorizon}, {"series_max_horizon", c.SeriesMaxHorizon}} {
		if h.v < 0 || time.Duration(h.v) > hardCap || (h.v != 0 && time.Duration(h.v) < time.Hour) {
			return fmt.Errorf("config: %s: must be 0 (the default) or lie between 1h and %s, got %s", h.key, hardCap, time.Duration(h.v))
		}
	}
	if c.SeriesHorizon != 0 && c.SeriesMaxHorizon != 0 && c.SeriesHorizon > c.SeriesMaxHorizon {
		return fmt.Errorf("config: series_horizon: %s is more than series_max_horizon %s", time.Duration(c.SeriesHorizon), time.Duration(c.SeriesMaxHorizon))
	}
	return nil
}
