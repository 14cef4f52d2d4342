package plot

// Figure is one rendered plot, ready to be written to disk or embedded in
// a report.
type Figure struct {
	// Name is the file name without extension, e.g. "timeline-no-prestop-r1".
	Name string
	// Title is a short heading for the figure.
	Title string
	// Caption says what the figure shows, in a sentence or two.
	Caption string
	// Variant is the variant row the figure is about ("" for figures about
	// the whole run).
	Variant string
	// PNG and SVG are the rendered images.
	PNG []byte
	SVG []byte
}
