package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/variant"
)

func newVariantsCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "variants",
		Short: "List the built-in shutdown variants and what each is expected to show",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VARIANT\tWHAT IT IS\tEXPECTED")
			for _, v := range variant.All() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Name, v.Summary, v.Expect)
			}
			return tw.Flush()
		},
	}
}
