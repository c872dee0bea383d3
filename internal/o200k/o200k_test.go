package o200k

import (
	"flag"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer/codec"
)

var update = flag.Bool("update", false, "rewrite o200k.bin from tiktoken-go's o200k_base")

// splitPattern is o200k_base's (tiktoken-go, codec/o200k_base.go). With
// the codec package linked, regexp2 runs it with the compiled matcher
// tiktoken-go registers for it, as the codec does.
const splitPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// TestTheVocabularyIsTiktokens checks o200k.bin, token by token, against
// tiktoken-go's o200k_base; -update writes it from there.
func TestTheVocabularyIsTiktokens(t *testing.T) {
	ref := codec.NewO200kBase()
	token := func(rank int) (string, bool) {
		s, err := ref.Decode([]uint{uint(rank)})
		return s, err == nil
	}
	if *update {
		var b strings.Builder
		for rank := 0; ; rank++ {
			s, ok := token(rank)
			if !ok {
				break
			}
			if len(s) > 255 {
				t.Fatalf("rank %d is %d bytes: longer than a length byte holds", rank, len(s))
			}
			b.WriteByte(byte(len(s)))
			b.WriteString(s)
		}
		if err := os.WriteFile("o200k.bin", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Skip("wrote o200k.bin: run the tests again without -update")
	}
	m := ranks()
	if len(m) != tokens {
		t.Fatalf("%d distinct tokens in o200k.bin, want %d", len(m), tokens)
	}
	rank := 0
	for i := 0; i < len(vocabBlob); rank++ {
		n := int(vocabBlob[i])
		got := vocabBlob[i+1 : i+1+n]
		i += 1 + n
		if want, ok := token(rank); !ok || got != want {
			t.Fatalf("rank %d is %q in o200k.bin, %q (%v) in tiktoken-go", rank, got, want, ok)
		}
	}
	if _, ok := token(rank); ok {
		t.Fatalf("tiktoken-go has a token of rank %d, which o200k.bin does not", rank)
	}
}

// texts are what the counts are compared on: prose, code, every kind of
// character the split pattern tells apart, and the corners of its
// backtracking.
var texts = []string{
	"",
	"hello world",
	"Hello, World! It's a test: they're here, we've gone, I'm sure, you'll see, he'd go.",
	"IT'S THEY'RE WE'VE I'M YOU'LL HE'D it'ſ It'S",
	"func main() {\n\tfmt.Println(\"héllo\")\n}\n\n\n    \n  x := 1_000_000 // 12345678\n",
	"  leading spaces and trailing   \t\n",
	"\n  \n  x", "\n\n  \n\n  y", " \r\n\r\n  z", "a  \n", "a \n b", "\t\t\tz", "   ", "x   ", "\u00a0\u3000word\u2028\u2029\u0085end",
	"CamelCaseWordsAndHTTPServer XMLHttpRequest iPhone eBay",
	"日本語のテキストです。中文文本。한국어 텍스트.",
	"Ελληνικά κείμενα, русский текст, עברית, العربية, हिन्दी, ไทย",
	"e\u0301 cafe\u0301 \u0301\u0301 a\u0308\u0304 \u0915\u093f Ǆǅǆ ǈ ʰʱ",
	"emoji 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ ✔︎",
	"½ ⅓ ² ³ Ⅻ ① 0123456789 ٠١٢٣ ４５６",
	"/// ---> <<<>>> !!! ??? ... ,,, ;;;\n/\n//\r\n",
	"path/to/file.go:12:34: error: something's wrong\n",
	`{"key": "value", "n": [1, 2, 3], "nested": {"a": null}}`,
	strings.Repeat("a", 300),
	strings.Repeat("ab", 97) + " " + strings.Repeat("xyz", 40),
	strings.Repeat("🙂", 50),
	strings.Repeat("-", 200) + "\n" + strings.Repeat("=", 97),
	"invalid \xff\xfe utf-8 \xc3 and \xed\xa0\x80 surrogate",
	"\xff", "'", "'s", " 's", "\r", "\n", "\r\n", "x'", "x'l", "x'LL",
}

// TestCountsAreTiktokens compares Count with tiktoken-go's o200k_base on
// the texts, and on random texts drawn from the characters the split
// pattern tells apart (seeded: the same texts on every run).
func TestCountsAreTiktokens(t *testing.T) {
	ref := codec.NewO200kBase()
	check := func(s string) {
		t.Helper()
		want, err := ref.Count(s)
		if err != nil {
			t.Fatalf("tiktoken-go: %q: %v", s, err)
		}
		if got := Count(s); got != want {
			t.Errorf("Count(%q) = %d, tiktoken-go counts %d", s, got, want)
		}
	}
	for _, s := range texts {
		check(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		check(randomText(rng))
	}
}

// TestPiecesAreTiktokens compares the split with tiktoken-go's matcher,
// piece by piece.
func TestPiecesAreTiktokens(t *testing.T) {
	re := regexp2.MustCompile(splitPattern, regexp2.None)
	check := func(s string) {
		t.Helper()
		if !utf8.ValidString(s) {
			s = string([]rune(s))
		}
		var want []string
		m, err := re.FindStringMatch(s)
		for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
			want = append(want, m.String())
		}
		if err != nil {
			t.Fatalf("regexp2: %q: %v", s, err)
		}
		var got []string
		for rest := s; rest != ""; {
			end := nextPiece(rest)
			got = append(got, rest[:end])
			rest = rest[end:]
		}
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("pieces of %q:\n got %q\nwant %q", s, got, want)
		}
	}
	for _, s := range texts {
		check(s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		check(randomText(rng))
	}
}

// FuzzCountIsTiktokens: go test -fuzz FuzzCountIsTiktokens ./internal/o200k/
func FuzzCountIsTiktokens(f *testing.F) {
	for _, s := range texts {
		f.Add(s)
	}
	ref := codec.NewO200kBase()
	f.Fuzz(func(t *testing.T, s string) {
		want, err := ref.Count(s)
		if err != nil {
			t.Skip(err) // regexp2's backtracking limit
		}
		if got := Count(s); got != want {
			t.Errorf("Count(%q) = %d, tiktoken-go counts %d", s, got, want)
		}
	})
}

// pools are characters of each class the split pattern tells apart.
var pools = [][]rune{
	[]rune("abcxyz"), []rune("ABCXYZ"), []rune("'sStTrRvVeEmMlLdDſ"),
	[]rune(" \t\n\r\v\f\u0085\u00a0\u2028\u3000"),
	[]rune("0123456789½²٣４Ⅻ"), []rune(".,;:!?-_/\\()[]{}<>\"#$%&*+=@^`|~"),
	[]rune("éüßñçøåÉÜÑ"), []rune("ǅǈǋ"), []rune("ʰʱˆ々ー"), []rune("日本語中文한국ไทยעבר"),
	[]rune("\u0301\u0308\u093f\u0e34\u200d\ufe0f"), []rune("👍🏽🙂🇫🇷❤✔€£¥©®™"),
	[]rune("ΑΒΓαβγДЖдж"), {utf8.RuneError},
}

// randomText is up to 40 characters from up to four of the pools, so that
// classes meet often.
func randomText(rng *rand.Rand) string {
	var picked [][]rune
	for range 1 + rng.IntN(4) {
		picked = append(picked, pools[rng.IntN(len(pools))])
	}
	var b strings.Builder
	for range rng.IntN(41) {
		p := picked[rng.IntN(len(picked))]
		b.WriteRune(p[rng.IntN(len(p))])
	}
	if rng.IntN(10) == 0 {
		b.WriteString("\xff") // one invalid byte
	}
	return b.String()
}

// benchText is about 100 KB of source code and prose, as a long session's
// request carries.
func benchText() string {
	b, err := os.ReadFile("count.go")
	if err != nil {
		panic(err)
	}
	var s strings.Builder
	for s.Len() < 100_000 {
		s.Write(b)
		for _, t := range texts {
			s.WriteString(t)
		}
	}
	return s.String()
}

// BenchmarkCount: the tokens of 100 KB, with this package and with
// tiktoken-go's o200k_base, whose counts it gives (docs/performance.md).
func BenchmarkCount(b *testing.B) {
	s := benchText()
	ranks()
	b.Run("o200k", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			Count(s)
		}
	})
	b.Run("tiktoken-go", func(b *testing.B) {
		ref := codec.NewO200kBase()
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if _, err := ref.Count(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoad: building the vocabulary's map, which the first count of
// a process pays.
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		loadRanks()
	}
}
