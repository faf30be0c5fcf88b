package lineageabi

import "context"

// A read of many goroutines takes seconds (100k goroutines of a stopped
// process, or a core), and the tool that reads must let its target run
// again as soon as it is interrupted: the loops of Goroutines, ReadLive
// and Cache.Read poll the View's context, once per record or batch, and
// end with its error.

// WithContext returns a copy of v whose reads of every goroutine end,
// with ctx's error, once ctx is done. A nil ctx is never done.
func (v *View) WithContext(ctx context.Context) *View {
	c := *v
	c.ctx = ctx
	return &c
}

// canceled is the error of v's context, nil while the read may go on.
func (v *View) canceled() error {
	if v.ctx == nil {
		return nil
	}
	return v.ctx.Err()
}
