package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ledgerd/ledgerd/rpc"
)

// Reload reads this server's certificate and key and the tokens file
// again and puts them into use without a restart: new TLS handshakes
// present the new certificate, new calls are checked against the new
// tokens; connections already open keep the certificate they negotiated.
// What fails to load leaves the old material in use and is returned. The
// ledgerd command calls it on SIGHUP.
func (a *Agent) Reload() error {
	var errs []error
	if a.certs != nil {
		if err := a.certs.reload(); err != nil {
			errs = append(errs, err)
		}
	}
	if a.auth != nil {
		auth, err := rpc.LoadAuthFile(a.cfg.TokensFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("config: tokens_file: %w", err))
		} else {
			a.auth.Replace(auth)
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		a.reloads.WithLabelValues("failed").Inc()
		a.log.Error("reload failed; the previous certificate and tokens stay in use", "err", err)
		return err
	}
	a.reloads.WithLabelValues("ok").Inc()
	a.log.Info("reloaded certificate and tokens", "certificate_expires", a.certs.notAfterOrZero())
	return nil
}

func (s *certSource) notAfterOrZero() time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.notAfter()
}

// reloadMetrics registers the reload counter and, with TLS, the time
// left on this server's certificate, for an alert before it expires.
func (a *Agent) reloadMetrics(reg prometheus.Registerer) {
	a.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ledgerd_reloads_total", Help: "Reloads of the certificate and tokens file (SIGHUP), by result.",
	}, []string{"result"})
	a.reloads.WithLabelValues("ok")
	a.reloads.WithLabelValues("failed")
	reg.MustRegister(a.reloads)
	if a.certs == nil {
		return
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ledgerd_tls_certificate_expiry_seconds",
		Help: "Seconds until this server's TLS certificate expires (negative once it has); rotate it and send SIGHUP.",
	}, func() float64 { return time.Until(a.certs.notAfter()).Seconds() }))
}
