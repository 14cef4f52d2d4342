package cluster

import (
	"fmt"
	"io"

	"sigs.k8s.io/kind/pkg/log"
)

// kindLogger prints kind's progress (level 0 only) and warnings to w.
type kindLogger struct{ w io.Writer }

func (l kindLogger) Warn(m string)                { fmt.Fprintln(l.w, "kind: warning:", m) }
func (l kindLogger) Warnf(f string, a ...any)     { l.Warn(fmt.Sprintf(f, a...)) }
func (l kindLogger) Error(m string)               { fmt.Fprintln(l.w, "kind: error:", m) }
func (l kindLogger) Errorf(f string, a ...any)    { l.Error(fmt.Sprintf(f, a...)) }
func (l kindLogger) V(v log.Level) log.InfoLogger { return infoLogger{w: l.w, on: v <= 0} }

type infoLogger struct {
	w  io.Writer
	on bool
}

func (l infoLogger) Info(m string) {
	if l.on {
		fmt.Fprintln(l.w, "kind:", m)
	}
}
func (l infoLogger) Infof(f string, a ...any) { l.Info(fmt.Sprintf(f, a...)) }
func (l infoLogger) Enabled() bool            { return l.on }
