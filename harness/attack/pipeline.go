package attack

import (
	"strings"

	"github.com/droprun/droprun/harness/traffic"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// keptHeaderPrefix selects the response headers stored in the results file:
// the bookshop's attribution headers (pod, version, gateway). The others
// (Date, Content-Type, Content-Length) would only grow the file.
const keptHeaderPrefix = "X-Bookshop-"

// trim drops what the results file does not need before res is encoded:
// response headers other than X-Bookshop-* and traffic.HiddenHeader, and the body
// of a 2xx response
// (the body of a failure, at most traffic.MaxBody bytes, is kept: a 502's body says
// why). BytesIn still counts the body bytes that were read.
func trim(res *vegeta.Result, class traffic.Class) {
	if !class.Failed() {
		res.Body = nil
	}
	for k := range res.Headers {
		if !strings.HasPrefix(k, keptHeaderPrefix) && k != traffic.HiddenHeader {
			delete(res.Headers, k)
		}
	}
	if len(res.Headers) == 0 {
		res.Headers = nil
	}
}

// pipeline is what happens to every result: classify, trim, encode.
type pipeline struct {
	enc vegeta.Encoder
}

// process classifies res, trims it and encodes it. It returns the record
// and the encoding error, if any; with a nil encoder nothing is written.
func (p *pipeline) process(res *vegeta.Result) (traffic.Record, error) {
	r := traffic.Result(*res)
	rec := traffic.FromResult(&r)
	trim(res, rec.Class)
	if p.enc == nil {
		return rec, nil
	}
	return rec, p.enc.Encode(res)
}
