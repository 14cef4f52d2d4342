package analysis

import (
	"fmt"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/traffic"
)

// IdleOrder is a variant's two idle timeouts for kept-alive connections,
// the client's and the app's, in the order they close a connection left
// idle, and what that order cost. The side that sends must close first:
// an app that closes an idle connection first races the client's next
// request on it, which fails (traffic.ClassIdleClosed) or which net/http
// retries behind the client's back (masked). Such failures come at any
// time, rollout or not: the control window shows them.
type IdleOrder struct {
	// Client is the client's idle timeout (traffic.idleTimeout); App the
	// app's (its workload's idleTimeout), "0s" for none: it never closes
	// an idle connection. App is "" when droprun does not know it.
	Client string `json:"client"`
	App    string `json:"app,omitempty"`
	// AppFirst is true when the app closes idle connections before the
	// client does (a timeout shorter than the client's).
	AppFirst bool `json:"appFirst"`
	// Unknown says why the order cannot be told; "" when it can.
	Unknown string `json:"unknown,omitempty"`
	// Failed and Masked count the variant's requests that failed as
	// idle-closed and those net/http retried after an idle-closed
	// failure, over all its traffic; ControlFailed and ControlMasked the
	// same in the control window, before any rollout.
	Failed        uint64 `json:"failed"`
	Masked        uint64 `json:"masked"`
	ControlFailed uint64 `json:"controlFailed"`
	ControlMasked uint64 `json:"controlMasked"`
}

// idleTimeouts returns variant v's idle timeouts and their order, without
// counts, or nil where the client keeps no connection idle for reuse (a
// new connection per request; h2c and gRPC, whose servers announce a
// close with GOAWAY).
func (in *input) idleTimeouts(v scenario.Variant) *IdleOrder {
	t := in.sc.Traffic
	if t.Protocol() != traffic.ProtocolKeepAlive || t.IdleTimeout == nil {
		return nil
	}
	o := &IdleOrder{Client: t.IdleTimeout.String()}
	switch i := in.sc.Index(v.Name); {
	case in.path.Proxy != nil:
		o.Unknown = fmt.Sprintf("the client's connections end at the %s front, whose own idle timeout toward the app droprun does not set", in.path.Name)
	case in.sc.App.Custom != nil || i < 0:
		o.Unknown = "the app is your own: droprun does not know its idle timeout"
	default:
		app := in.sc.Effective(i).IdleTimeout.Get()
		o.App = app.String()
		o.AppFirst = app > 0 && app < t.IdleTimeout.Duration
	}
	return o
}

// counted returns a copy of o with row vs's idle-closed requests counted;
// nil for a nil o.
func (o *IdleOrder) counted(vs VariantSummary) *IdleOrder {
	if o == nil {
		return nil
	}
	c := *o
	for _, tl := range []Tally{vs.Control, vs.Tail, vs.Outside} {
		c.Failed += tl.Classes[traffic.ClassIdleClosed]
		c.Masked += tl.MaskedClasses[traffic.ClassIdleClosed]
	}
	c.Failed += vs.Classes[traffic.ClassIdleClosed]
	c.Masked += vs.MaskedClasses[traffic.ClassIdleClosed]
	c.ControlFailed = vs.Control.Classes[traffic.ClassIdleClosed]
	c.ControlMasked = vs.Control.MaskedClasses[traffic.ClassIdleClosed]
	return &c
}

// ExplainsControl reports whether every failure of a control window is
// an idle-closed one the idle order explains: the app closing first.
func (o *IdleOrder) ExplainsControl(control Tally) bool {
	return o != nil && o.AppFirst && control.Failures > 0 && control.Classes[traffic.ClassIdleClosed] == control.Failures
}
