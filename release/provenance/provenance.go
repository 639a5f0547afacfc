// Package provenance writes and reads the release's in-toto Statement v1
// with a SLSA provenance v1 predicate.
//
// The statement is built with the in-toto attestation Go types and
// validated by them, then re-encoded as canonical JSON (sorted keys, no
// spaces): protojson deliberately varies its whitespace from one build of
// the tool to the next, and the statement bytes must be reproducible
// because they are what gets signed and published.
package provenance

import (
	"errors"
	"fmt"
	"sort"
	"time"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/cacheon/engine/internal/canonjson"
)

// Wire identifiers of a release provenance.
const (
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://slsa.dev/provenance/v1"
	// BuildType says how to read externalParameters and
	// resolvedDependencies; docs/release-engineer-guide.md documents it.
	BuildType = "https://cacheon.dev/release/engine-image/v1"
	// BuilderID names the trusted builder: the cacheon release command
	// run as a hermetic build action with explicit inputs.
	BuilderID = "https://cacheon.dev/release/builder/v1"
)

// Resource is an in-toto ResourceDescriptor with string annotations.
type Resource struct {
	Name        string
	URI         string
	MediaType   string
	Digest      map[string]string
	Annotations map[string]string
}

// Provenance is the part of a SLSA v1 provenance statement a release
// uses, in plain Go types.
type Provenance struct {
	Subjects           []Resource
	BuildType          string
	ExternalParameters map[string]string
	InternalParameters map[string]string
	Dependencies       []Resource
	BuilderID          string
	BuilderVersion     map[string]string
	InvocationID       string
	// Epoch is both startedOn and finishedOn: the source date epoch, so
	// the statement does not record when the build happened to run.
	Epoch      int64
	Byproducts []Resource
}

func toDescriptor(r Resource) (*intoto.ResourceDescriptor, error) {
	d := &intoto.ResourceDescriptor{Name: r.Name, Uri: r.URI, MediaType: r.MediaType, Digest: r.Digest}
	if len(r.Annotations) > 0 {
		s, err := stringStruct(r.Annotations)
		if err != nil {
			return nil, err
		}
		d.Annotations = s
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("resource %q: %w", r.Name, err)
	}
	return d, nil
}

func stringStruct(m map[string]string) (*structpb.Struct, error) {
	fields := make(map[string]any, len(m))
	for k, v := range m {
		fields[k] = v
	}
	return structpb.NewStruct(fields)
}

func descriptors(rs []Resource) ([]*intoto.ResourceDescriptor, error) {
	sorted := append([]Resource(nil), rs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	out := make([]*intoto.ResourceDescriptor, 0, len(sorted))
	for _, r := range sorted {
		d, err := toDescriptor(r)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Statement returns the canonical JSON of the statement.
func (p *Provenance) Statement() ([]byte, error) {
	deps, err := descriptors(p.Dependencies)
	if err != nil {
		return nil, fmt.Errorf("resolvedDependencies: %w", err)
	}
	byproducts, err := descriptors(p.Byproducts)
	if err != nil {
		return nil, fmt.Errorf("byproducts: %w", err)
	}
	ext, err := stringStruct(p.ExternalParameters)
	if err != nil {
		return nil, fmt.Errorf("externalParameters: %w", err)
	}
	bd := &slsa.BuildDefinition{BuildType: p.BuildType, ExternalParameters: ext, ResolvedDependencies: deps}
	if len(p.InternalParameters) > 0 {
		if bd.InternalParameters, err = stringStruct(p.InternalParameters); err != nil {
			return nil, fmt.Errorf("internalParameters: %w", err)
		}
	}
	at := timestamppb.New(time.Unix(p.Epoch, 0).UTC())
	prov := &slsa.Provenance{
		BuildDefinition: bd,
		RunDetails: &slsa.RunDetails{
			Builder:    &slsa.Builder{Id: p.BuilderID, Version: p.BuilderVersion},
			Metadata:   &slsa.BuildMetadata{InvocationId: p.InvocationID, StartedOn: at, FinishedOn: at},
			Byproducts: byproducts,
		},
	}
	if err := prov.Validate(); err != nil {
		return nil, fmt.Errorf("invalid SLSA provenance: %w", err)
	}
	predJSON, err := protojson.Marshal(prov)
	if err != nil {
		return nil, err
	}
	pred := &structpb.Struct{}
	if err := protojson.Unmarshal(predJSON, pred); err != nil {
		return nil, err
	}
	var subjects []*intoto.ResourceDescriptor
	for _, s := range p.Subjects {
		d, err := toDescriptor(s)
		if err != nil {
			return nil, fmt.Errorf("subject: %w", err)
		}
		subjects = append(subjects, d)
	}
	st := &intoto.Statement{Type: StatementType, Subject: subjects, PredicateType: PredicateType, Predicate: pred}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("invalid in-toto statement: %w", err)
	}
	raw, err := protojson.Marshal(st)
	if err != nil {
		return nil, err
	}
	return canonical(raw)
}

func canonical(raw []byte) ([]byte, error) {
	v, err := canonjson.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalize statement: %w", err)
	}
	return canonjson.Marshal(v)
}

// ErrNotProvenance is wrapped when a statement is not SLSA v1 provenance.
var ErrNotProvenance = errors.New("not a SLSA v1 provenance statement")

// Parse reads statement bytes, validates them with the in-toto types and
// returns the provenance. It checks the statement and predicate types and
// the shape; whether the values are the expected ones is the verifier's
// job.
func Parse(statement []byte) (*Provenance, error) {
	st := &intoto.Statement{}
	if err := protojson.Unmarshal(statement, st); err != nil {
		return nil, fmt.Errorf("parse in-toto statement: %w", err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("invalid in-toto statement: %w", err)
	}
	if st.PredicateType != PredicateType {
		return nil, fmt.Errorf("%w: predicateType is %q, want %q", ErrNotProvenance, st.PredicateType, PredicateType)
	}
	predJSON, err := protojson.Marshal(st.Predicate)
	if err != nil {
		return nil, err
	}
	prov := &slsa.Provenance{}
	if err := protojson.Unmarshal(predJSON, prov); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotProvenance, err)
	}
	if err := prov.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotProvenance, err)
	}
	p := &Provenance{
		BuildType:      prov.GetBuildDefinition().GetBuildType(),
		BuilderID:      prov.GetRunDetails().GetBuilder().GetId(),
		BuilderVersion: prov.GetRunDetails().GetBuilder().GetVersion(),
		InvocationID:   prov.GetRunDetails().GetMetadata().GetInvocationId(),
		Epoch:          prov.GetRunDetails().GetMetadata().GetStartedOn().GetSeconds(),
	}
	if p.ExternalParameters, err = fromStruct(prov.GetBuildDefinition().GetExternalParameters()); err != nil {
		return nil, fmt.Errorf("externalParameters: %w", err)
	}
	if p.InternalParameters, err = fromStruct(prov.GetBuildDefinition().GetInternalParameters()); err != nil {
		return nil, fmt.Errorf("internalParameters: %w", err)
	}
	if p.Subjects, err = fromDescriptors(st.GetSubject()); err != nil {
		return nil, fmt.Errorf("subject: %w", err)
	}
	if p.Dependencies, err = fromDescriptors(prov.GetBuildDefinition().GetResolvedDependencies()); err != nil {
		return nil, fmt.Errorf("resolvedDependencies: %w", err)
	}
	if p.Byproducts, err = fromDescriptors(prov.GetRunDetails().GetByproducts()); err != nil {
		return nil, fmt.Errorf("byproducts: %w", err)
	}
	return p, nil
}

func fromStruct(s *structpb.Struct) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range s.GetFields() {
		sv, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return nil, fmt.Errorf("%s: want a string value", k)
		}
		out[k] = sv.StringValue
	}
	return out, nil
}

func fromDescriptors(ds []*intoto.ResourceDescriptor) ([]Resource, error) {
	out := make([]Resource, 0, len(ds))
	for _, d := range ds {
		ann, err := fromStruct(d.GetAnnotations())
		if err != nil {
			return nil, fmt.Errorf("%s annotations: %w", d.GetName(), err)
		}
		out = append(out, Resource{Name: d.GetName(), URI: d.GetUri(), MediaType: d.GetMediaType(), Digest: d.GetDigest(), Annotations: ann})
	}
	return out, nil
}

// Find returns the resource named name in rs.
func Find(rs []Resource, name string) (*Resource, bool) {
	for i := range rs {
		if rs[i].Name == name {
			return &rs[i], true
		}
	}
	return nil, false
}
