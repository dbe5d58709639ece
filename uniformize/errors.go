package uniformize

import "errors"

// ErrNotTwoTable is returned for a join that is not two relations sharing
// at least one join attribute.
var ErrNotTwoTable = errors.New("uniformize: the two-table partition needs exactly two relations that share a join attribute")

// ErrTwoTablePlanUsed is returned by a second [TwoTablePlan.Run].
var ErrTwoTablePlanUsed = errors.New("uniformize: plan already ran; its budget is spent")

// ErrHierPlanUsed is returned by a second [HierPlan.Run].
var ErrHierPlanUsed = errors.New("uniformize: hierarchical plan already ran; its budget is spent")
