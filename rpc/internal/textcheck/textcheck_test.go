package textcheck

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

func TestFindNamesTheInvalidString(t *testing.T) {
	for _, tc := range []struct {
		doc, want string
	}{
		{`{"text":"a\ud800b"}`, `text is not valid Unicode (an unpaired surrogate \ud800)`},
		{`{"text":"\udc00"}`, `text is not valid Unicode (an unpaired surrogate \udc00)`},
		{`{"text":"\uD83D"}`, `text is not valid Unicode (an unpaired surrogate \ud83d)`},
		{`{"text":"\ud83d\u0041"}`, `text is not valid Unicode (an unpaired surrogate \ud83d)`},
		{`{"text":"\ud83d\\ude00"}`, `text is not valid Unicode (an unpaired surrogate \ud83d)`},
		{"{\"files\":[{\"name\":\"a.txt\",\"text\":\"ok\"},{\"name\":\"b\xff.txt\",\"text\":\"\"}]}", `files[1].name is not valid Unicode (invalid UTF-8)`},
		{"{\"files\":[{\"name\":\"a.txt\", \"text\" : \"x\xed\xa0\x80\"}]}", `files[0].text is not valid Unicode (invalid UTF-8)`},
		{"{\"a\":{\"b\xc3\":1}}", `a member name in a is not valid Unicode (invalid UTF-8)`},
		{`{"k\udfff":1}`, `a member name is not valid Unicode (an unpaired surrogate \udfff)`},
		{`{"a\"b":[1,true,null,{"c":["\ud800"]}]}`, `a"b[3].c[0] is not valid Unicode (an unpaired surrogate \ud800)`},
		{`["\ud800"]`, `[0] is not valid Unicode (an unpaired surrogate \ud800)`},
	} {
		iv := Find([]byte(tc.doc))
		if iv == nil {
			t.Errorf("%q: nothing found", tc.doc)
			continue
		}
		if got := iv.Error(); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.doc, got, tc.want)
		}
	}
}

func TestFindAcceptsValidUnicode(t *testing.T) {
	for _, doc := range []string{
		`{}`, `{"text":"plain"}`, `{"text":"\ud83d\ude00 \uD83D\uDE00 é \u00e9 \ufffd \\ud800 \\\\"}`,
		`{"text":"日本語 😀","n":-1.5e3,"b":[true,false,null,[],{}]}`, "{\"x\":\"\xef\xbf\xbd\"}",
	} {
		if iv := Find([]byte(doc)); iv != nil {
			t.Errorf("%s: %s", doc, iv.Error())
		}
	}
}

// Find never panics, whatever the input, and never refuses a document
// whose bytes are valid UTF-8 without \u escapes.
func FuzzFind(f *testing.F) {
	for _, s := range []string{`{"a":"\ud800"}`, `{"a":"\ud83d\ude00"}`, "{\"a\":\"\xff\"}", `{"a":["x",{"b":"\\u"}]}`, `{"a":"\ud800\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		iv := Find(doc)
		if iv != nil && utf8.Valid(doc) && !bytes.Contains(doc, []byte(`\u`)) {
			t.Fatalf("%q refused: %s", doc, iv.Error())
		}
		if iv != nil && iv.Reason == "" {
			t.Fatalf("%q: no reason", doc)
		}
	})
}
