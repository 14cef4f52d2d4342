package gate

import (
	"encoding/xml"
	"io"
)

// JUnit XML, the subset CI systems read: one suite for the run, one test
// case per row and check. A failed check is a <failure>; an inconclusive
// one an <error> of type "inconclusive" (the gate could not decide, which
// is not a pass); every case carries its message in <system-out> too.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string    `xml:"name,attr"`
	Classname string    `xml:"classname,attr"`
	Failure   *junitMsg `xml:"failure,omitempty"`
	Error     *junitMsg `xml:"error,omitempty"`
	SystemOut string    `xml:"system-out,omitempty"`
}

type junitMsg struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit writes r as JUnit XML.
func (r *Report) JUnit(w io.Writer) error {
	s := junitSuite{Name: "droprun check " + r.Run}
	for _, res := range r.Results {
		class := "droprun.run"
		if res.Row != "" {
			class = "droprun." + res.Row
		}
		c := junitCase{Name: res.Check, Classname: class, SystemOut: res.Message}
		switch res.Verdict {
		case Fail:
			c.Failure = &junitMsg{Type: "fail", Message: res.Message, Text: res.Message}
			s.Failures++
		case Inconclusive:
			c.Error = &junitMsg{Type: "inconclusive", Message: res.Message, Text: res.Message}
			s.Errors++
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	doc := junitSuites{Name: "droprun", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
