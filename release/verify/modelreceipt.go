package verify

import (
	"github.com/cacheon/engine/models"
	"github.com/cacheon/engine/release/descriptor"
)

// checkModelReceipt (CheckModelReceipt) requires the model receipt in
// the release layer to be the one the descriptor pins.
func (v *verification) checkModelReceipt() error {
	receipt, err := ModelReceipt(v.d, v.rel.Files)
	if err != nil {
		return err
	}
	v.rep.pass(CheckModelReceipt, "model content %s", receipt.ContentDigest)
	return nil
}

// ModelReceipt checks the model receipt shipped in the release
// against the descriptor and returns it.
func ModelReceipt(d *descriptor.Descriptor, files map[string][]byte) (*models.Receipt, error) {
	rb := files[descriptor.ModelReceipt]
	if rb == nil || descriptor.SHA256(rb) != d.Model.ReceiptSHA256 {
		return nil, failf(CheckModelReceipt, "/%s is missing or does not hash to sha256:%s", descriptor.ModelReceipt, d.Model.ReceiptSHA256)
	}
	receipt, err := models.ParseReceipt(rb)
	if err != nil {
		return nil, fail(CheckModelReceipt, err)
	}
	if rd, _ := receipt.Digest(); rd != d.Model.ReceiptDigest || receipt.ContentDigest != d.Model.ContentDigest {
		return nil, failf(CheckModelReceipt, "receipt %s for model content %s, the descriptor says %s for %s", rd, receipt.ContentDigest, d.Model.ReceiptDigest, d.Model.ContentDigest)
	}
	return receipt, nil
}
