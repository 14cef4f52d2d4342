package nodeimage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// fakeEngine is a local image store and a registry for Selector's seams.
type fakeEngine struct {
	local    map[string]map[string]string // ref => labels
	registry map[string]map[string]string // what a pull brings
	probed   []string
	pulled   []string
	builds   int
}

func (f *fakeEngine) selector(t *testing.T) *Selector {
	t.Helper()
	return &Selector{
		inspect: func(_ context.Context, ref string) (map[string]string, error) {
			if l, ok := f.local[ref]; ok {
				return l, nil
			}
			return nil, ErrNoImage
		},
		probe: func(ctx context.Context, ref string) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("probe of %s without a deadline: it must fail fast offline", ref)
			}
			f.probed = append(f.probed, ref)
			if _, ok := f.registry[ref]; ok {
				return nil
			}
			return errors.New("dial tcp: lookup registry-1.docker.io: no such host")
		},
		pull: func(_ context.Context, ref string, _ io.Writer) error {
			f.pulled = append(f.pulled, ref)
			l, ok := f.registry[ref]
			if !ok {
				return errors.New("manifest unknown")
			}
			f.local[ref] = l
			return nil
		},
		build: func(_ context.Context, o Options) (*Result, error) {
			f.builds++
			f.local[o.Image] = map[string]string{LabelInputs: "sha256:new"}
			return &Result{Image: o.Image}, nil
		},
	}
}

func TestChooseAuto(t *testing.T) {
	want, err := ExpectedInputs("", Versions{})
	if err != nil {
		t.Fatalf("ExpectedInputs from the source tree: %v", err)
	}
	droprunLabels := map[string]string{LabelInputs: want}
	for _, tc := range []struct {
		name             string
		local, registry  map[string]map[string]string
		source           Source
		image            string
		present, droprun bool
		reason           string
		probes           int
	}{
		{name: "cached droprun image", local: map[string]map[string]string{DefaultImage: droprunLabels},
			source: SourceCached, image: DefaultImage, present: true, droprun: true, reason: "up to date"},
		{name: "published image present", local: map[string]map[string]string{PublishedImage: {}},
			source: SourcePublished, image: PublishedImage, present: true, reason: "kindnetd"},
		{name: "registry serves the published image", registry: map[string]map[string]string{PublishedImage: {}},
			source: SourcePublished, image: PublishedImage, reason: "will be pulled", probes: 1},
		{name: "offline", source: SourceBuild, image: DefaultImage, droprun: true, reason: "no registry reachable", probes: 1},
		{name: "stale droprun image, offline",
			local:  map[string]map[string]string{DefaultImage: {LabelInputs: "sha256:old"}},
			source: SourceBuild, image: DefaultImage, droprun: true, reason: "built from other inputs", probes: 1},
		{name: "stale droprun image, registry",
			local:    map[string]map[string]string{DefaultImage: {LabelInputs: "sha256:old"}},
			registry: map[string]map[string]string{PublishedImage: {}},
			source:   SourcePublished, image: PublishedImage, reason: "built from other inputs", probes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{local: tc.local, registry: tc.registry}
			if f.local == nil {
				f.local = map[string]map[string]string{}
			}
			for _, ref := range []string{Auto, ""} {
				f.probed = nil
				ch, err := f.selector(t).Choose(context.Background(), ref)
				if err != nil {
					t.Fatalf("Choose(%q): %v", ref, err)
				}
				if ch.Source != tc.source || ch.Image != tc.image || ch.Present != tc.present || ch.Droprun != tc.droprun || !ch.Auto {
					t.Errorf("Choose(%q) = %+v; want source %s image %s present %v droprun %v auto", ref, ch, tc.source, tc.image, tc.present, tc.droprun)
				}
				if !strings.Contains(ch.Reason, tc.reason) {
					t.Errorf("reason %q does not say %q", ch.Reason, tc.reason)
				}
				if len(f.probed) != tc.probes {
					t.Errorf("probed %v, want %d probe(s): a present image needs no registry", f.probed, tc.probes)
				}
			}
			if len(f.pulled) != 0 || f.builds != 0 {
				t.Errorf("Choose pulled %v and built %d times: it must only decide", f.pulled, f.builds)
			}
		})
	}
}

func TestChooseGiven(t *testing.T) {
	const mirror = "127.0.0.1:5000/mirror/node:v1.37.2"
	f := &fakeEngine{local: map[string]map[string]string{"example.com/other:v1": {}},
		registry: map[string]map[string]string{mirror: {LabelInputs: "sha256:x"}}}
	s := f.selector(t)

	// Present, not droprun's: its labels decide, not its name.
	ch, err := s.Choose(context.Background(), "example.com/other:v1")
	if err != nil || ch.Source != SourceGiven || !ch.Present || ch.Droprun || ch.Auto {
		t.Errorf("present foreign image: %+v, %v", ch, err)
	}

	// Missing but pullable: pulled by Ensure, then droprun's by its label.
	ch, err = s.Choose(context.Background(), mirror)
	if err != nil || ch.Source != SourceGiven || ch.Present {
		t.Fatalf("pullable image: %+v, %v", ch, err)
	}
	ch, err = s.Ensure(context.Background(), ch)
	if err != nil {
		t.Fatal(err)
	}
	if !ch.Present || !ch.Pulled || ch.Built || !ch.Droprun || f.builds != 0 {
		t.Errorf("after Ensure: %+v (builds %d); want pulled, droprun's by label, nothing built", ch, f.builds)
	}
	if len(f.pulled) != 1 || f.pulled[0] != mirror {
		t.Errorf("pulled %v", f.pulled)
	}

	// Missing and not pullable: an error naming the image and the way out.
	_, err = s.Choose(context.Background(), "example.com/missing:v1")
	if err == nil || !strings.Contains(err.Error(), "example.com/missing:v1") || !strings.Contains(err.Error(), "nodeImage: auto") {
		t.Errorf("unpullable image: %v", err)
	}
	// droprun's own names are never probed: no registry has them.
	f.probed = nil
	_, err = s.Choose(context.Background(), "droprun/node:v9")
	if err == nil || !strings.Contains(err.Error(), "droprun node-image build") || len(f.probed) != 0 {
		t.Errorf("missing droprun image: %v (probed %v)", err, f.probed)
	}
}

func TestEnsureBuildsAnnounced(t *testing.T) {
	f := &fakeEngine{local: map[string]map[string]string{}}
	s := f.selector(t)
	var out bytes.Buffer
	s.Out = &out
	ch, err := s.Choose(context.Background(), Auto)
	if err != nil || ch.Source != SourceBuild {
		t.Fatalf("offline: %+v, %v", ch, err)
	}
	ch, err = s.Ensure(context.Background(), ch)
	if err != nil {
		t.Fatal(err)
	}
	if f.builds != 1 || !ch.Present || !ch.Built || !ch.Droprun || len(f.pulled) != 0 {
		t.Errorf("after Ensure: %+v, builds %d, pulled %v", ch, f.builds, f.pulled)
	}
	if !strings.Contains(out.String(), BuildAnnouncement) {
		t.Errorf("output %q does not announce the build", out.String())
	}
	// Present: Ensure does nothing.
	if _, err := s.Ensure(context.Background(), ch); err != nil || f.builds != 1 {
		t.Errorf("Ensure of a present image built again (%d) or failed: %v", f.builds, err)
	}
}

func TestPublishedImagePinned(t *testing.T) {
	if !strings.HasPrefix(PublishedImage, "kindest/node:v1.37.") || !strings.Contains(PublishedImage, "@sha256:") {
		t.Errorf("PublishedImage %q: want kind's digest-pinned node image of Kubernetes 1.37", PublishedImage)
	}
	if err := CheckRef(PublishedImage); err != nil {
		t.Errorf("CheckRef(PublishedImage): %v", err)
	}
}
