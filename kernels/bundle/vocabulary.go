package bundle

import "sort"

// MaterializedBundleID is the bundle_id of the runtime manifest at the root
// of a materialized engine tree. The engine substrate refuses a tree whose
// manifest names another id; kernels/substrate's generated vocabulary module
// carries it to the Python side.
const MaterializedBundleID = "cacheon-materialized-v1"

// NumericFields returns the numeric capability fields of op metadata,
// sorted: they take non-negative integers and may use ranges.
func NumericFields() []string { return sortedFields(numericFields) }

// ContextFields returns the context capability fields of op metadata,
// sorted: they take strings.
func ContextFields() []string { return sortedFields(contextFields) }

func sortedFields(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
