package traffic

import (
	"slices"
	"strings"
	"testing"
)

// Classify is total: every code and error text gets one of the known
// classes, a failure unless the code is 2xx, and the code alone decides
// once there is a response.
func FuzzClassify(f *testing.F) {
	for _, seed := range []struct {
		code uint16
		err  string
	}{
		{200, ""}, {204, ""}, {502, "502 Bad Gateway"}, {503, ""}, {404, ""}, {599, ""}, {600, ""}, {301, ""},
		{0, `Get "http://127.0.0.1:30080/version": dial tcp 127.0.0.1:30080: connect: connection refused`},
		{0, `Get "http://127.0.0.1:30080/version": read tcp 127.0.0.1:5555->127.0.0.1:30080: read: connection reset by peer`},
		{0, `Get "http://127.0.0.1:30080/version": EOF`},
		{0, `Get "http://127.0.0.1:30080/version": context deadline exceeded`},
		{0, `Get "http://127.0.0.1:30080/version": net/http: timeout awaiting response headers`},
		{0, "write: broken pipe"}, {0, ""}, {0, "\xff\xfe"},
	} {
		f.Add(seed.code, seed.err)
	}
	f.Fuzz(func(t *testing.T, code uint16, errText string) {
		c := Classify(code, errText)
		if !slices.Contains(Classes(), c) {
			t.Fatalf("Classify(%d, %q) = %q, not a known class", code, errText, c)
		}
		if c.Failed() != !(code >= 200 && code < 300) {
			t.Fatalf("Classify(%d, %q) = %q: Failed() = %v", code, errText, c, c.Failed())
		}
		if code != 0 && Classify(code, "") != c {
			t.Fatalf("Classify(%d, %q) = %q depends on the error text of a response", code, errText, c)
		}
		if code == 0 && !strings.HasPrefix(string(c), "000:") {
			t.Fatalf("Classify(0, %q) = %q: a transport error has no status class", errText, c)
		}
	})
}
