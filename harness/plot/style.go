package plot

import (
	"bytes"
	"fmt"
	"image/color"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/droprun/droprun/harness/traffic"
)

// DPI is the resolution of the PNG images: a figure W inches wide is
// W·DPI pixels wide.
const DPI = 120

// Figure sizes. Every figure is figWidth wide; the legend, when there is
// one, gets a strip of legendWidth on the right, outside the data.
const (
	figWidth    = 10 * vg.Inch
	legendWidth = 2.5 * vg.Inch
)

// sans is the typeface of every text: Liberation Sans ships with gonum/plot.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Font sizes, in points.
const (
	titleSize  = 13
	labelSize  = 11
	tickSize   = 10
	legendSize = 10
	noteSize   = 10
)

// newPlot returns a plot with droprun's fonts, a title and axis labels.
func newPlot(title, xlabel, ylabel string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, titleSize)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, labelSize)
		a.Tick.Label.Font = font.From(sans, tickSize)
	}
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	p.Legend.TextStyle.Font = font.From(sans, legendSize)
	return p
}

// newLegend returns an empty legend in droprun's font, to be drawn in its
// own strip beside the data (drawLegend).
func newLegend() gplot.Legend {
	l := gplot.NewLegend()
	l.TextStyle.Font = font.From(sans, legendSize)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(24)
	l.Padding = vg.Points(3)
	return l
}

// splitLegend cuts c into the area for the plots and the strip on the
// right for the legend.
func splitLegend(c draw.Canvas) (plots, legend draw.Canvas) {
	plots = draw.Crop(c, 0, -legendWidth, 0, 0)
	legend = draw.Crop(c, c.Max.X-c.Min.X-legendWidth+vg.Points(10), -vg.Points(4), 0, 0)
	return plots, legend
}

// drawLegend draws l in the legend strip, its top aligned with the top of
// the data area (top is the y of that edge).
func drawLegend(l gplot.Legend, strip draw.Canvas, top vg.Length) {
	strip.Max.Y = top
	l.Draw(strip)
}

// textStyle is a plain text style of the given size and alignment.
func textStyle(size vg.Length, xa draw.XAlignment, ya draw.YAlignment, clr color.Color) draw.TextStyle {
	return draw.TextStyle{
		Color:   clr,
		Font:    font.From(sans, size),
		XAlign:  xa,
		YAlign:  ya,
		Handler: gplot.DefaultTextHandler,
	}
}

// hex parses "#rrggbb".
func hex(s string) color.RGBA {
	var r, g, b uint8
	if _, err := fmt.Sscanf(s, "#%02x%02x%02x", &r, &g, &b); err != nil {
		panic("plot: bad colour " + s)
	}
	return color.RGBA{R: r, G: g, B: b, A: 255}
}

// classColors gives every outcome class its catalogue colour
// (traffic.ClassInfo.Colour), the same in every figure and on the report
// page.
var classColors = func() map[traffic.Class]color.RGBA {
	m := map[traffic.Class]color.RGBA{}
	for _, ci := range traffic.Catalogue() {
		m[ci.Class] = hex(ci.Colour)
	}
	return m
}()

// ClassColor returns the colour figures give class c (black for a class
// droprun does not know).
func ClassColor(c traffic.Class) color.Color {
	if clr, ok := classColors[c]; ok {
		return clr
	}
	return color.Black
}

// swatch is a legend thumbnail: a filled box.
type swatch struct{ color color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	pad := (r.Max.Y - r.Min.Y) * 0.15
	c.FillPolygon(s.color, []vg.Point{
		{X: r.Min.X, Y: r.Min.Y + pad}, {X: r.Max.X, Y: r.Min.Y + pad},
		{X: r.Max.X, Y: r.Max.Y - pad}, {X: r.Min.X, Y: r.Max.Y - pad},
	})
}

// lineThumb is a legend thumbnail: a horizontal line in a style, drawn as
// vertical markers across data are (panelLine).
type lineThumb struct{ style draw.LineStyle }

// Thumbnail implements plot.Thumbnailer.
func (l lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(panelLine(l.style), c.Min.X, y, c.Max.X, y)
}

// render paints a figure w×h twice: as PNG (vgimg at DPI) and as SVG. A
// panic in the drawing (gonum/plot panics on impossible ranges) becomes an
// error.
func render(w, h vg.Length, paint func(c draw.Canvas)) (pngData, svgData []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing: %v", r)
		}
	}()
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	paint(draw.New(img))
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&pb); err != nil {
		return nil, nil, fmt.Errorf("encoding PNG: %w", err)
	}
	svg := vgsvg.New(w, h)
	dc := draw.New(svg)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	paint(dc)
	var sb bytes.Buffer
	if _, err := svg.WriteTo(&sb); err != nil {
		return nil, nil, fmt.Errorf("encoding SVG: %w", err)
	}
	return pb.Bytes(), sb.Bytes(), nil
}
