package cluster

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter routes hashicorp/raft's hclog output into a slog.Logger.
// raft's own default is DEBUG; the adapter drops everything below its level
// (INFO unless the slog handler says otherwise).
type hclogAdapter struct {
	l     *slog.Logger
	name  string
	level hclog.Level
	args  []any
}

var _ hclog.Logger = (*hclogAdapter)(nil)

func newHclog(l *slog.Logger, name string) *hclogAdapter {
	return &hclogAdapter{l: l, name: name, level: hclog.Info}
}

func toSlogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (h *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off || level < h.level {
		return
	}
	sl := toSlogLevel(level)
	if !h.l.Enabled(context.Background(), sl) {
		return
	}
	all := make([]any, 0, len(h.args)+len(args)+2)
	all = append(all, "component", h.name)
	all = append(all, h.args...)
	all = append(all, args...)
	h.l.Log(context.Background(), sl, msg, all...)
}

func (h *hclogAdapter) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogAdapter) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogAdapter) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogAdapter) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogAdapter) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }
func (h *hclogAdapter) IsTrace() bool                 { return h.level <= hclog.Trace }
func (h *hclogAdapter) IsDebug() bool                 { return h.level <= hclog.Debug }
func (h *hclogAdapter) IsInfo() bool                  { return h.level <= hclog.Info }
func (h *hclogAdapter) IsWarn() bool                  { return h.level <= hclog.Warn }
func (h *hclogAdapter) IsError() bool                 { return h.level <= hclog.Error }
func (h *hclogAdapter) ImpliedArgs() []any            { return h.args }
func (h *hclogAdapter) Name() string                  { return h.name }
func (h *hclogAdapter) SetLevel(level hclog.Level)    { h.level = level }
func (h *hclogAdapter) GetLevel() hclog.Level         { return h.level }

func (h *hclogAdapter) With(args ...any) hclog.Logger {
	c := *h
	c.args = append(append([]any(nil), h.args...), args...)
	return &c
}

func (h *hclogAdapter) Named(name string) hclog.Logger {
	c := *h
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (h *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

func (h *hclogAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(nil), "", 0)
}

func (h *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &levelPrefixWriter{l: h.l, component: h.name, min: slog.LevelInfo}
}

// levelPrefixWriter turns "[WARN] memberlist: ..." lines, as written by
// memberlist and other *log.Logger users, into slog records at the level
// the prefix names, dropping those below min.
type levelPrefixWriter struct {
	l         *slog.Logger
	component string
	min       slog.Level
}

func (w *levelPrefixWriter) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		s := strings.TrimSpace(string(line))
		level := slog.LevelInfo
		for prefix, lv := range map[string]slog.Level{
			"[TRACE]": slog.LevelDebug - 4, "[DEBUG]": slog.LevelDebug, "[INFO]": slog.LevelInfo,
			"[WARN]": slog.LevelWarn, "[ERR]": slog.LevelError, "[ERROR]": slog.LevelError,
		} {
			if rest, ok := strings.CutPrefix(s, prefix); ok {
				level, s = lv, strings.TrimSpace(rest)
				break
			}
		}
		if level < w.min || s == "" {
			continue
		}
		w.l.Log(context.Background(), level, s, "component", w.component)
	}
	return len(p), nil
}
