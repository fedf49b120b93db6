package hosts

import (
	"context"
	"fmt"
	"testing"
)

// The framing through a real sh: sections keep data that looks like
// anything (a line like an old marker, another command's mark, no final
// newline), and a result ends the script with exit 0.
func TestAskSectionsAndResult(t *testing.T) {
	other := NewMark()
	reply, err := Ask(context.Background(), &Local{Name: "local"}, func(m Mark) string {
		return fmt.Sprintf(`echo head
%s; printf '=== b\n%s section x y\n'
%s; printf 'no newline'
%s
echo never`, m.Section("one", Quote("first arg")), other, m.Section("two", ""), m.Result("done"))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Reply{Head: []byte("head\n"), Result: "done", Sections: []Section{
		{Kind: "one", Arg: "first arg", Body: []byte("=== b\n" + string(other) + " section x y\n")},
		{Kind: "two", Body: []byte("no newline")},
	}}
	if fmt.Sprintf("%q", reply) != fmt.Sprintf("%q", want) {
		t.Fatalf("reply =\n%q\nwant\n%q", reply, want)
	}
}

func TestParseReplyRefusesUnknownFrames(t *testing.T) {
	m := NewMark()
	if _, err := ParseReply(m, []byte(string(m)+" sections x\n")); err == nil {
		t.Fatal("an unknown frame was accepted")
	}
}
