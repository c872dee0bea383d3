package rpc

import (
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/rpc/internal/native"
)

// UsageTotals is docs/protocol.md's usage object, as prompt timings and
// session usage carry it.
type UsageTotals = native.UsageTotals

// UsageTotalsOf is the usage object of a total of model calls. loop run's
// json output uses it, so its usage and the protocol's cannot disagree.
func UsageTotalsOf(u *convo.UsageSum) UsageTotals { return native.UsageSumOf(u) }
