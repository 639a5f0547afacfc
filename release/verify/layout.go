package verify

import "errors"

// checkLayout (CheckLayout) runs the caller's supply-chain layout check,
// when there is one, on the release verified so far. A failure it names
// keeps its own check.
func (v *verification) checkLayout() error {
	if v.opts.Layout == nil {
		return nil
	}
	v.rel.attached = v.att
	if err := v.opts.Layout(v.rel); err != nil {
		var f *Failure
		if errors.As(err, &f) {
			return err
		}
		return fail(CheckLayout, err)
	}
	return nil
}
