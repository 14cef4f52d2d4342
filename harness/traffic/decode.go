package traffic

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/gob"
	"encoding/json"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// decoder decodes the next Result of a stream; io.EOF at its end.
type decoder func(*Result) error

// resultDecoder detects the encoding of r from its first result, trying
// vegeta's gob, JSON and CSV in that order (as vegeta.DecoderFor does),
// and returns a decoder of the whole stream; nil when none decodes it.
func resultDecoder(r io.Reader) decoder {
	var buf bytes.Buffer
	for _, dec := range []func(io.Reader) decoder{gobDecoder, jsonDecoder, csvDecoder} {
		first := io.MultiReader(bytes.NewReader(buf.Bytes()), io.TeeReader(r, &buf))
		if err := dec(first)(&Result{}); err == nil {
			return dec(io.MultiReader(&buf, r))
		}
	}
	return nil
}

// gobDecoder decodes vegeta's binary encoding (vegeta.NewEncoder: gob,
// whose structs match by field name).
func gobDecoder(r io.Reader) decoder {
	dec := gob.NewDecoder(r)
	return func(res *Result) error { return dec.Decode(res) }
}

// jsonDecoder decodes vegeta's JSON encoding, one result a line
// (vegeta.NewJSONEncoder). A blank line holds no result and is skipped (
// vegeta's decoder took it for the end of the file and dropped the rest);
// a last line without its newline was cut off: io.ErrUnexpectedEOF, as a
// cut gob stream gives (vegeta's decoder dropped it without a word).
func jsonDecoder(r io.Reader) decoder {
	br := bufio.NewReader(r)
	return func(res *Result) error {
		for {
			line, err := br.ReadBytes('\n')
			blank := len(bytes.TrimSpace(line)) == 0
			switch {
			case err == io.EOF && !blank:
				return io.ErrUnexpectedEOF
			case err != nil:
				return err
			case blank:
				continue
			}
			return json.Unmarshal(line, res)
		}
	}
}

// csvDecoder decodes vegeta's CSV encoding (vegeta.NewCSVEncoder): UNIX
// time in ns, code, latency in ns, bytes out, bytes in, error, body
// (base64), attack, seq, method, URL, headers (base64 of their wire form).
func csvDecoder(r io.Reader) decoder {
	dec := csv.NewReader(r)
	dec.FieldsPerRecord = 12
	dec.TrimLeadingSpace = true
	return func(res *Result) error {
		rec, err := dec.Read()
		if err != nil {
			return err
		}
		var ts, latency int64
		var code uint64
		for _, f := range []func() error{
			func() (err error) { ts, err = strconv.ParseInt(rec[0], 10, 64); return },
			func() (err error) { code, err = strconv.ParseUint(rec[1], 10, 16); return },
			func() (err error) { latency, err = strconv.ParseInt(rec[2], 10, 64); return },
			func() (err error) { res.BytesOut, err = strconv.ParseUint(rec[3], 10, 64); return },
			func() (err error) { res.BytesIn, err = strconv.ParseUint(rec[4], 10, 64); return },
			func() (err error) { res.Body, err = base64.StdEncoding.DecodeString(rec[6]); return },
			func() (err error) { res.Seq, err = strconv.ParseUint(rec[8], 10, 64); return },
			func() (err error) { res.Headers, err = csvHeaders(rec[11]); return },
		} {
			if err := f(); err != nil {
				return err
			}
		}
		res.Timestamp, res.Code, res.Latency = time.Unix(0, ts), uint16(code), time.Duration(latency)
		res.Error, res.Attack, res.Method, res.URL = rec[5], rec[7], rec[9], rec[10]
		return nil
	}
}

// csvHeaders reads a CSV result's headers: base64 of their wire form.
func csvHeaders(field string) (http.Header, error) {
	if field == "" {
		return nil, nil
	}
	tr := textproto.NewReader(bufio.NewReader(base64.NewDecoder(base64.StdEncoding, strings.NewReader(field))))
	h, err := tr.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	return http.Header(h), nil
}
