package store

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/loopdev/loop/convo"
)

// fill sets every field of the struct v points to at random, zero values
// included (omitempty), so that a field added to a record without its
// line in recordjson.go makes the comparison below fail.
func fill(t *testing.T, r *rand.Rand, v reflect.Value) {
	t.Helper()
	strs := []string{"", "plain", `"q" \ b`, "\n\t\x01\x7f", "<&>", "é\u2028😀", "\xff bad", "\ufffd"}
	raws := []string{"", `{"a": [1, 2]}`, ` "s" `, `null`, `{"x":{"y":"<z>"}}`}
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		name := v.Type().Field(i).Name
		switch {
		case f.Type() == reflect.TypeOf(json.RawMessage(nil)):
			if s := raws[r.IntN(len(raws))]; s != "" {
				f.SetBytes([]byte(s))
			}
		case f.Kind() == reflect.String:
			f.SetString(strs[r.IntN(len(strs))])
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
			f.SetInt([]int64{0, 1, -5, 1 << 40}[r.IntN(4)])
		case f.Kind() == reflect.Bool:
			f.SetBool(r.IntN(2) == 0)
		case f.Kind() == reflect.Pointer:
			if r.IntN(3) > 0 {
				p := reflect.New(f.Type().Elem())
				fill(t, r, p.Elem())
				f.Set(p)
			}
		case f.Kind() == reflect.Slice:
			switch r.IntN(3) {
			case 0: // nil
			case 1:
				f.Set(reflect.MakeSlice(f.Type(), 0, 0))
			default:
				s := reflect.MakeSlice(f.Type(), 1+r.IntN(3), 3)
				for j := 0; j < s.Len(); j++ {
					if e := s.Index(j); e.Kind() == reflect.Struct {
						fill(t, r, e)
					} else if e.Kind() == reflect.String {
						e.SetString(strs[r.IntN(len(strs))])
					} else {
						t.Fatalf("field %s: slice of %s: teach fill", name, e.Kind())
					}
				}
				f.Set(s)
			}
		default:
			t.Fatalf("field %s of kind %s: teach fill (and check recordjson.go writes it)", name, f.Kind())
		}
	}
}

func encodingJSONLine(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// The hand-written log lines are the bytes encoding/json writes for the
// same records, every field at random.
func TestRecordLinesMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var m messageRecord
		fill(t, r, reflect.ValueOf(&m).Elem())
		got, err := m.appendJSON([]byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		if want := encodingJSONLine(t, &m); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("message line\n got %s\nwant %s", got[1:], want)
		}
		var rt runtimeRecord
		fill(t, r, reflect.ValueOf(&rt).Elem())
		if got, err = rt.appendJSON(nil); err != nil {
			t.Fatal(err)
		}
		if want := encodingJSONLine(t, &rt); !bytes.Equal(got, want) {
			t.Fatalf("runtime line\n got %s\nwant %s", got, want)
		}
	}
}

// Arguments or data that are not JSON fail the batch (ErrInvalid), as
// encoding/json failed it.
func TestRecordLinesRefuseRawThatIsNotJSON(t *testing.T) {
	msgs := []convo.Message{{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockToolCall, ID: "c", Name: "n", Arguments: json.RawMessage(`{"a":`)}}}}
	if _, err := encodeBatch(msgs, 0, 0, nil); err == nil {
		t.Error("arguments that are not JSON were written")
	}
	if _, err := encodeBatch(nil, 0, 0, []RuntimeRecord{{Type: "x", Data: json.RawMessage(`[1,`)}}); err == nil {
		t.Error("runtime data that is not JSON was written")
	}
}
