package dispatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/textcheck"
)

// testWording words errors as the native dialect's default does.
type testWording struct{}

func (testWording) TypeError(*json.UnmarshalTypeError) string { return "" }
func (testWording) UnicodeCode(*textcheck.Invalid) engine.Code {
	return engine.CodeInvalidParams
}

// longPiece is text with every kind of escape and multi-byte UTF-8, some
// escaped and some sent as they are.
const longPiece = `line \"quoted\" \\ back\/slash\ttab\r\n \u00e9t\u00e9 \ud83d\ude00 caf` + "\xc3\xa9 \xe4\xb8\xad" + ` \u4e2d\b\f end\n`

// longLiteral is the inside of a JSON string literal longer than
// longText: lines of code, as pasted, with longPiece's escapes among them.
func longLiteral() string {
	piece := longPiece + strings.Repeat(`func main() { fmt.Println(a, b) } // the quick brown fox\n`, 8)
	return strings.Repeat(piece, longText/len(piece)+2)
}

type promptLike struct {
	SessionID string `json:"sessionId"`
	Text      Text   `json:"text,omitempty"`
	Files     []struct {
		Name string `json:"name"`
		Text *Text  `json:"text"`
	} `json:"files,omitempty"`
	Images []struct {
		Data string `json:"data"`
	} `json:"images,omitempty"`
}

// decodeOld decodes a copy of params the way Decode did before long texts
// were decoded in place.
func decodeOld[T any](t *testing.T, params string) (*T, error) {
	t.Helper()
	v := new(T)
	data := []byte(params)
	if iv := textcheck.Find(data); iv != nil {
		return v, &engine.Error{Code: engine.CodeInvalidParams, Message: iv.Error()}
	}
	return v, unmarshal(data, v, testWording{})
}

// within reports whether s's bytes lie in b's.
func within(s string, b []byte) bool {
	if len(s) == 0 || cap(b) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(b[:1])))
	return lo <= p && p+uintptr(len(s)) <= lo+uintptr(cap(b))
}

// A prompt's long text (and a long file's) decodes to the string Text
// gives, and that string is the params' own bytes, unescaped where they
// lie: no second copy of a 50 MB prompt.
func TestALongPromptTextIsDecodedWhereItLies(t *testing.T) {
	lit := longLiteral()
	params := `{"sessionId":"s1","text":"` + lit + `","files":[{"name":"a.txt","text":"` + lit + `"},{"name":"b","text":"short\n"}]}`
	want, err := decodeOld[promptLike](t, params)
	if err != nil {
		t.Fatal(err)
	}
	raw := json.RawMessage(params)
	buf := []byte(raw)
	got := new(promptLike)
	if err := Decode(&raw, got, testWording{}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded differently: text %d bytes (want %d), files %d", len(got.Text), len(want.Text), len(got.Files))
	}
	if !within(string(got.Text), buf) || !within(string(*got.Files[0].Text), buf) {
		t.Fatal("a long text was copied out of the params instead of decoded where it lies")
	}
	if raw != nil {
		t.Fatal("Decode kept the params it decoded long texts in")
	}
}

// A long string that is not a Text's (a plain string, a key, inside a map
// or an any) decodes exactly as before, and the params are left as they
// came.
func TestALongStringOutsideATextDecodesAsBefore(t *testing.T) {
	lit := longLiteral()
	cases := []struct {
		name, params string
		decode       func(*testing.T, string) (got, want any, err, wantErr error)
	}{
		{"plain string", `{"sessionId":"` + lit + `","text":"` + lit + `"}`, both[promptLike]},
		{"image data", `{"text":"` + lit + `","images":[{"data":"` + lit + `"}]}`, both[promptLike]},
		{"a key", `{"text":"` + lit + `","` + lit + `":1}`, both[promptLike]},
		{"a map of texts", `{"m":{"a":"` + lit + `"}}`, both[struct {
			M map[string]Text `json:"m"`
		}]},
		{"an any", `{"x":["` + lit + `"],"text":"` + lit + `"}`, both[struct {
			X    any  `json:"x"`
			Text Text `json:"text"`
		}]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, want, err, wantErr := c.decode(t, c.params)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("got %v, want %v", err, wantErr)
			}
		})
	}
}

// both decodes params with Decode and as before; Decode's params must come
// back unchanged when it did not decode in place.
func both[T any](t *testing.T, params string) (got, want any, err, wantErr error) {
	want, wantErr = decodeOld[T](t, params)
	raw := json.RawMessage(params)
	g := new(T)
	err = Decode(&raw, g, testWording{})
	if raw != nil && !bytes.Equal(raw, []byte(params)) {
		t.Fatal("Decode changed params it then decoded as before")
	}
	return g, want, err, wantErr
}

// Malformed params holding a long string are refused with the error they
// got before: broken JSON in or after the string, a string that is not
// valid Unicode, a member of the wrong type.
func TestMalformedParamsWithALongTextAreRefusedAsBefore(t *testing.T) {
	lit := longLiteral()
	cases := map[string]string{
		"a control byte":      `{"text":"` + lit + "\x01" + `"}`,
		"a bad escape":        `{"text":"` + lit + `\x"}`,
		"a short \\u":         `{"text":"` + lit + `\u12"}`,
		"unpaired surrogate":  `{"text":"` + lit + `\ud800 x"}`,
		"invalid UTF-8":       `{"text":"` + lit + "\xff" + `"}`,
		"unterminated":        `{"text":"` + lit,
		"wrong type after":    `{"text":"` + lit + `","files":5}`,
		"wrong type before":   `{"files":5,"text":"` + lit + `"}`,
		"text not a string":   `{"sessionId":"` + lit + `","text":5}`,
		"garbage after":       `{"text":"` + lit + `"} x`,
		"missing comma":       `{"text":"` + lit + `" "sessionId":"a"}`,
		"a file's text wrong": `{"files":[{"name":"` + lit + `","text":["` + lit + `"]}]}`,
	}
	for name, params := range cases {
		t.Run(name, func(t *testing.T) {
			got, want, err, wantErr := both[promptLike](t, params)
			if err == nil || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("got error %v, want %v", err, wantErr)
			}
			_, _ = got, want
		})
	}
}

// The in-place unescaping gives what Text gives for every escape, a
// surrogate pair and multi-byte UTF-8 among them.
func TestUnquoteInPlaceDecodesAsText(t *testing.T) {
	for _, c := range textCases {
		if len(c) < 2 || c[0] != '"' {
			continue
		}
		in := []byte(c[1 : len(c)-1])
		n, ok := unquotedLen(in)
		var want Text
		if err := json.Unmarshal([]byte(c), &want); err != nil {
			continue
		}
		if !ok {
			continue // left to Text: invalid UTF-8, unpaired surrogates
		}
		if got := string(in[:unquoteInPlace(in)]); got != string(want) || n != len(want) {
			t.Errorf("%s: got %q (counted %d), want %q", c, got, n, want)
		}
	}
}
