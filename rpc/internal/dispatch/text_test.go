package dispatch

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// textCases are JSON values a string field may be sent: plain, escaped,
// every escape, surrogate pairs and unpaired surrogates, invalid UTF-8,
// and values that are not strings.
var textCases = []string{
	`""`, `"plain"`, `"a\nb"`, `"\"quoted\" \\ \/ \b\f\n\r\t"`, `"\u0041\u00e9\u4e2d"`,
	`"\ud83d\ude00 pair"`, `"\ud83d alone"`, `"\ude00 low alone"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
	"\"caf\xc3\xa9 \xff\xfe bytes\"", "\"\xe4\xb8\xad\\n\xf0\x9f\x98\x80\"", `"end\u"` + `0041"`,
	`null`, `5`, `true`, `[]`, `{}`,
}

// decodeBoth decodes data into a struct of a string and one of a Text.
func decodeBoth(data string) (want string, wantErr error, got Text, gotErr error) {
	var a struct {
		Text string `json:"text"`
	}
	var b struct {
		Text Text `json:"text"`
	}
	a.Text, b.Text = "before", "before"
	doc := `{"text":` + data + `}`
	wantErr = json.Unmarshal([]byte(doc), &a)
	gotErr = json.Unmarshal([]byte(doc), &b)
	return a.Text, wantErr, b.Text, gotErr
}

// Text decodes every JSON value as encoding/json decodes it into a string:
// the same string, null leaving the field as it was, the same type error
// (its field named) for any other value.
func TestTextDecodesAsEncodingJSONDecodesAString(t *testing.T) {
	for _, c := range textCases {
		want, wantErr, got, gotErr := decodeBoth(c)
		if string(got) != want {
			t.Errorf("%s: got %q, want %q", c, got, want)
		}
		var wte, gte *json.UnmarshalTypeError
		if errors.As(wantErr, &wte) != errors.As(gotErr, &gte) || (wte != nil && (wte.Field != gte.Field || wte.Value != gte.Value || wte.Type.Kind() != gte.Type.Kind())) {
			t.Errorf("%s: error %v, want %v", c, gotErr, wantErr)
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: error %v, want %v", c, gotErr, wantErr)
		}
	}
}

func FuzzTextDecodesAsEncodingJSON(f *testing.F) {
	for _, c := range textCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, data string) {
		if !json.Valid([]byte(data)) {
			return
		}
		want, wantErr, got, gotErr := decodeBoth(data)
		if (gotErr == nil) != (wantErr == nil) || string(got) != want {
			t.Fatalf("%q: got %q (%v), want %q (%v)", data, got, gotErr, want, wantErr)
		}
	})
}

// A long escaped text is decoded into one allocation of its own size;
// encoding/json allocates the size of the encoded text and then the
// string, over twice the text.
func TestLongTextDecodesIntoOneAllocationOfItsSize(t *testing.T) {
	line := "func main() { fmt.Println(\"a \\\"quoted\\\" word\") }\n"
	text := strings.Repeat(line, 40000) // about 2 MB
	doc, _ := json.Marshal(map[string]string{"text": text})
	var p struct {
		Text Text `json:"text"`
	}
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	n := allocated(func() {
		if err := json.Unmarshal(doc, &p); err != nil {
			t.Fatal(err)
		}
	})
	if string(p.Text) != text {
		t.Fatal("decoded text differs")
	}
	if limit := uint64(len(text)) * 11 / 10; n > limit {
		t.Errorf("decoding %d bytes of text allocated %d bytes, want at most %d", len(text), n, limit)
	}
}
