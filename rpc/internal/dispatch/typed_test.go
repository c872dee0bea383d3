package dispatch_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/loopdev/loop/rpc/internal/dispatch"
)

type echoParams struct {
	Name string `json:"name"`
}

type echoResult struct {
	Hello string `json:"hello"`
}

// A typed handler gets its params decoded by the one adapter, with the
// dialect's checks (null or absent params are {}, anything but an object
// is refused), and replies with its result; nil is {}; Defer moves the
// work off the read loop; Unread params are never looked at.
func TestTypedHandlersDecodeTheirParamsAndReplyWithTheirResult(t *testing.T) {
	echo := func(_ context.Context, p *echoParams) (*echoResult, error) {
		if p.Name == "" {
			return nil, nil
		}
		return &echoResult{Hello: p.Name}, nil
	}
	later := func(ctx context.Context, p *echoParams) (*echoResult, error) {
		return dispatch.Defer(ctx, func(context.Context) (*echoResult, error) { return &echoResult{Hello: "later " + p.Name}, nil })
	}
	unread := func(context.Context, *dispatch.Unread) (*echoResult, error) { return &echoResult{Hello: "unread"}, nil }
	d := dispatch.New(dispatch.Dialect{Methods: map[string]dispatch.Method{
		"echo":   {Handle: dispatch.Typed(words{}, echo)},
		"later":  {Handle: dispatch.Typed(words{}, later)},
		"unread": {Handle: dispatch.Typed(words{}, unread)},
	}})
	p := connect(t, d)
	cases := []struct {
		method, params, result, code string
	}{
		{"echo", `{"name":"ann"}`, `{"hello":"ann"}`, ""},
		{"echo", `null`, `{}`, ""},
		{"echo", `{"name":"ann","other":1}`, `{"hello":"ann"}`, ""},
		{"echo", `{"name":1}`, "", "invalid_params"},
		{"echo", `{"name":"\udc00"}`, "", "invalid_params"},
		{"later", `{"name":"bo"}`, `{"hello":"later bo"}`, ""},
		{"unread", `{"name":"\udc00"}`, `{"hello":"unread"}`, ""},
	}
	for i, c := range cases {
		p.send(i+1, c.method, c.params)
		r := p.wait(i + 1)
		if got := errorCode(r); got != c.code {
			t.Errorf("%s %s: error %q, want %q", c.method, c.params, got, c.code)
			continue
		}
		if c.code == "" {
			var got any // compacted, as c.result is written
			if err := json.Unmarshal(r.Result, &got); err != nil {
				t.Fatal(err)
			}
			if gb, _ := json.Marshal(got); string(gb) != c.result {
				t.Errorf("%s %s: result %s, want %s", c.method, c.params, r.Result, c.result)
			}
		}
	}
}
