package jsonenc_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
)

type inner struct {
	Text  string          `json:"text,omitempty"`
	Raw   json.RawMessage `json:"raw,omitempty"`
	Count int             `json:"count"`
}

type embedded struct {
	inner
	Extra string `json:"extra"`
}

type textKey string

func (k textKey) MarshalText() ([]byte, error) { return []byte("k-" + string(k)), nil }

type byPointer struct{ N int }

func (b *byPointer) MarshalJSON() ([]byte, error) { return []byte(`{"pointer":true}`), nil }

type kinds struct {
	S       string            `json:"s"`
	Empty   string            `json:"empty,omitempty"`
	B       bool              `json:"b"`
	F       float64           `json:"f"`
	F32     float32           `json:"f32,omitempty"`
	I       int64             `json:"i"`
	U       uint8             `json:"u"`
	P       *inner            `json:"p"`
	NilP    *inner            `json:"nilP"`
	Any     any               `json:"any"`
	List    []inner           `json:"list"`
	NilList []string          `json:"nilList"`
	Bytes   []byte            `json:"bytes"`
	Map     map[string]any    `json:"map"`
	KeyMap  map[textKey]int   `json:"keyMap"`
	IntMap  map[int]string    `json:"intMap"`
	Arr     [2]string         `json:"arr"`
	Raw     json.RawMessage   `json:"raw"`
	RawP    *json.RawMessage  `json:"rawP"`
	Num     json.Number       `json:"num"`
	Time    time.Time         `json:"time"`
	Emb     embedded          `json:"emb"`
	ByPtr   byPointer         `json:"byPtr"`
	Odd     odd               `json:"odd"`
	Skip    string            `json:"-"`
	NoTag   string            //
	private string            //
	Strs    map[string]string `json:"strs,omitempty"`
}

// odd has tag options Append leaves to Marshal.
type odd struct {
	Quoted int    `json:"quoted,string"`
	Zero   int    `json:"zero,omitzero"`
	Dash   string `json:"-,"`
}

var strs = []string{"", "plain", "<a href='x'>&</a>", "quote \" back \\ slash", "tab\t\n\r\b\f\x00\x1f\x7f",
	"é中😀", "\u2028\u2029", "\xff\xfe bad \xc3", strings.Repeat("long line with \"escapes\"\n and é ", 5000)}

func values() []any {
	raw := json.RawMessage(`{"a": [1, 2], "b": "x y \u003c\u0026"}`)
	var out []any
	for _, s := range strs {
		out = append(out, s, &s, []string{s, s}, map[string]string{s: s, "k": s}, inner{Text: s, Count: 3},
			kinds{
				S: s, B: true, F: 1.5e-7, F32: 3.25, I: -42, U: 7, P: &inner{Text: s}, Any: map[string]any{"n": 1.0, "s": s, "l": []any{s, nil, true}},
				List: []inner{{Text: s}, {}}, Bytes: []byte(s), Map: map[string]any{"z": s, "a": []int{1}},
				KeyMap: map[textKey]int{"b": 1, "a": 2}, IntMap: map[int]string{2: s, 10: s}, Arr: [2]string{s, s},
				Raw: raw, RawP: &raw, Num: "12.50", Time: time.Date(2026, 12, 1, 0, 0, 0, 5, time.UTC),
				Emb: embedded{inner: inner{Text: s}, Extra: s}, Odd: odd{Quoted: 9, Dash: s}, Skip: s, NoTag: s, private: s,
			},
			convo.Message{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: s}, {Type: convo.BlockToolCall, ID: s, Name: "read", Arguments: raw}}, Timestamp: 17},
			[]any{s, 1, -0.0, math.MaxInt64, uint64(math.MaxUint64), nil, false, json.RawMessage(nil)},
		)
	}
	out = append(out, nil, (*inner)(nil), json.RawMessage(`"x"`), []byte(nil), map[string]int(nil), struct{}{}, float32(1e-7), float32(3.4e38))
	for _, f := range []float64{0, -0.0, 1, -1.5, 0.1, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.123, 5e-324, math.MaxFloat64, 1.0 / 3} {
		out = append(out, f, float32(f), []float64{f, -f})
	}
	return out
}

// Append, Size and Write encode every value byte for byte as Marshal does:
// tags, omitempty, every kind, maps sorted, escapes, invalid UTF-8, long
// strings, and what they leave to Marshal (floats, byte slices, marshalers,
// embedded structs, other tag options).
func TestAppendSizeAndWriteEncodeAsMarshalDoes(t *testing.T) {
	for i, v := range values() {
		want, wantErr := jsonenc.Marshal(v)
		want = jsonenc.UnescapeHTML(want)
		got, err := jsonenc.Append([]byte("prefix"), v)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, append([]byte("prefix"), want...)) && err == nil {
			t.Fatalf("value %d: Append = %.200s (%v), Marshal = %.200s (%v)", i, got, err, want, wantErr)
		}
		if n, err := jsonenc.Size(v); err == nil && n != len(want) {
			t.Errorf("value %d: Size = %d, want %d", i, n, len(want))
		}
		var w bytes.Buffer
		if n, err := jsonenc.Write(&w, v); err == nil && (n != len(want) || !bytes.Equal(w.Bytes(), want)) {
			t.Errorf("value %d: Write = %.200s (%d bytes), want %.200s", i, w.Bytes(), n, want)
		}
	}
}

// What Marshal refuses, they refuse.
func TestAppendRefusesWhatMarshalRefuses(t *testing.T) {
	for _, v := range []any{math.NaN(), map[string]any{"f": math.Inf(1)}, json.RawMessage(`{"a":`), []any{func() {}}, json.RawMessage{}} {
		if _, err := jsonenc.Marshal(v); err == nil {
			t.Fatalf("Marshal accepted %#v", v)
		}
		if _, err := jsonenc.Append(nil, v); err == nil {
			t.Errorf("Append accepted %#v", v)
		}
		if _, err := jsonenc.Size(v); err == nil {
			t.Errorf("Size accepted %#v", v)
		}
	}
}

func FuzzAppendEncodesAsMarshal(f *testing.F) {
	for _, s := range strs[:len(strs)-1] {
		f.Add(s, int64(len(s)), true)
	}
	f.Fuzz(func(t *testing.T, s string, n int64, b bool) {
		v := kinds{S: s, Empty: s, B: b, I: n, Any: []any{s, n, b}, List: []inner{{Text: s, Count: int(n)}}, Map: map[string]any{s: s}, Strs: map[string]string{s: s, "": s}}
		want, wantErr := jsonenc.Marshal(v)
		got, err := jsonenc.Append(nil, v)
		if (err == nil) != (wantErr == nil) || err == nil && !bytes.Equal(got, want) {
			t.Fatalf("Append = %s (%v), Marshal = %s (%v)", got, err, want, wantErr)
		}
		var w bytes.Buffer
		if _, err := jsonenc.Write(&w, s); err != nil || !bytes.Equal(w.Bytes(), jsonenc.AppendString(nil, s)) {
			t.Fatalf("Write(%q) = %s (%v)", s, w.Bytes(), err)
		}
	})
}

// A long string costs Append room for itself once, not the quarter-by-
// quarter growth of Marshal's buffer.
func TestAppendMakesRoomForALongStringOnce(t *testing.T) {
	text := strings.Repeat("func main() { fmt.Println(\"a \\\"quoted\\\" word\") }\n", 40000) // about 2 MB
	v := convo.Message{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: text}}}
	want, _ := jsonenc.Marshal(v)
	allocated := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := jsonenc.Append(nil, v); err != nil {
				b.Fatal(err)
			}
		}
	}).AllocedBytesPerOp()
	if raceEnabled {
		t.Logf("NOT CHECKED under -race (it allocates %d bytes here; the plain run of make test checks the bound): the race detector's instrumentation allocates more", allocated)
		return
	}
	if limit := int64(len(want)) * 12 / 10; allocated > limit {
		t.Errorf("Append of a %d-byte encoding allocated %d bytes, want at most %d", len(want), allocated, limit)
	}
}
