package pyparse

// TokenKind is the kind of a Token. The kinds are CPython's, with
// f-strings split as PEP 701 splits them.
type TokenKind uint8

// Token kinds.
const (
	TokenEnd           TokenKind = TokenKind(tEnd) // ENDMARKER
	TokenNewline       TokenKind = TokenKind(tNewline)
	TokenIndent        TokenKind = TokenKind(tIndent)
	TokenDedent        TokenKind = TokenKind(tDedent)
	TokenName          TokenKind = TokenKind(tName)
	TokenNumber        TokenKind = TokenKind(tNumber)
	TokenString        TokenKind = TokenKind(tString)
	TokenFStringStart  TokenKind = TokenKind(tFStart)
	TokenFStringMiddle TokenKind = TokenKind(tFMiddle)
	TokenFStringEnd    TokenKind = TokenKind(tFEnd)
	TokenOp            TokenKind = TokenKind(tOp)
)

func (k TokenKind) String() string { return tokKind(k).String() }

// Token is one token of a parsed file. Start and End are byte offsets
// into the source. Text is the NFKC-normalized identifier of a name and
// the operator of an operator; for the other kinds it is empty and the
// source bytes between Start and End are the token.
type Token struct {
	Kind       TokenKind
	Start, End int
	Text       string
}

// ParseTokens is Parse that also returns the tokens the tree was parsed
// from, comments and line joins already gone, so that a reader which
// needs both (a normalizer re-emitting the code) tokenizes only once.
// The tokens are returned only when the parse succeeds.
func ParseTokens(name string, src []byte) (*File, *Module, []Token, error) {
	f := NewFile(name, src)
	lx, err := newLexer(f, Latest)
	if err != nil {
		return f, nil, nil, err
	}
	p := &parser{f: f, src: f.Src, lx: lx, keep: true, version: Latest}
	mod, err := p.run()
	if err != nil {
		return f, nil, nil, err
	}
	out := make([]Token, len(lx.toks))
	for i := range lx.toks {
		t := &lx.toks[i]
		out[i] = Token{Kind: TokenKind(t.kind), Start: int(t.start), End: int(t.end), Text: p.text(t)}
	}
	return f, mod, out, nil
}
