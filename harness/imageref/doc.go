// Package imageref checks the image references a scenario or a flag names,
// by the grammar alone (github.com/distribution/reference): no registry or
// engine is asked. It is a leaf, so that the scenario parser, which the
// analysis of a recorded run reads, needs no image or cluster code.
package imageref
