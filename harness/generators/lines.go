package generators

import (
	"bytes"
	"errors"
	"fmt"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/droprun/droprun/harness/traffic"
)

// lineDecoder decodes vegeta JSON results one line at a time, for results
// that arrive as lines among others (a generator's log), with vegeta's
// own generated JSON decoder, the fastest there is for them: one decoder
// and its buffers for every line, where traffic.ReadResults would set up a
// reader and sniff the format for each.
type lineDecoder struct {
	r   bytes.Reader
	dec vegeta.Decoder
}

func newLineDecoder() *lineDecoder {
	d := &lineDecoder{}
	d.dec = vegeta.NewJSONDecoder(&d.r)
	return d
}

// decode decodes line, one JSON result ending in a newline, as a Record.
func (d *lineDecoder) decode(line []byte) (traffic.Record, error) {
	if len(line) == 0 || line[len(line)-1] != '\n' || bytes.IndexByte(line, '\n') != len(line)-1 {
		return traffic.Record{}, errors.New("not one line ending in a newline")
	}
	d.r.Reset(line)
	var res vegeta.Result
	if err := d.dec(&res); err != nil {
		return traffic.Record{}, fmt.Errorf("a JSON result: %w", err)
	}
	r := traffic.Result(res)
	return traffic.FromResult(&r), nil
}
