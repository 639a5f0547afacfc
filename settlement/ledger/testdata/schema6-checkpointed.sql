-- A ledger at schema 6 holding a checkpoint, written by the schema 6
-- build (the tree at commit 4bcdf19, the parent of schema 7's commit) and
-- dumped as SQL: the schema as that build created it, then every row.
-- Read by TestASchema6CheckpointedLedgerUpgrades (migrate_test.go).
--
-- What it holds, in the order it was written: the first stack; a crown
-- (settlement events 1-3, stack 2, a standing claim); proposal 1
-- (hk-live), leased by gpu-7 at 03:00 and reclaimed as expired at 05:00,
-- so published again with a lost attempt and a back-off; proposal 2
-- (hk-done), failed by the operator; proposal 3 (hkA) and proposal 4
-- (hkB), a copy of 3, failed copy_of:3:payload with a standing copy
-- verdict; then the checkpoint (row record 7), which rebinds the live rows
-- and records proposal 1's lease; after it a second crown (settlement
-- events 4-6, stack 3) and proposal 5 (hk-after). Schema 6 bound no
-- proposal transition.
CREATE TABLE schema_version (
    version INTEGER PRIMARY KEY CHECK (version >= 1),
    name    TEXT NOT NULL,
    sha256  TEXT NOT NULL
);
CREATE TABLE proposals (
    id                      INTEGER PRIMARY KEY,
    arena_digest            TEXT    NOT NULL CHECK (arena_digest = '' OR length(arena_digest) = 64),
    content_hash            TEXT    NOT NULL CHECK (length(content_hash) = 64),
    committed_content_hash  TEXT    NOT NULL CHECK (length(committed_content_hash) = 64),
    hotkey                  TEXT    NOT NULL CHECK (hotkey <> ''),
    block                   INTEGER NOT NULL CHECK (block > 0),
    event_index             INTEGER NOT NULL CHECK (event_index >= 0),
    subevent_index          INTEGER NOT NULL CHECK (subevent_index >= 0),
    target_id               TEXT    NOT NULL,
    target_spec_digest      TEXT    NOT NULL CHECK (target_spec_digest = '' OR length(target_spec_digest) = 64),
    selected_payload_digest TEXT    NOT NULL CHECK (selected_payload_digest = '' OR length(selected_payload_digest) = 64),
    selected_delta_digest   TEXT    NOT NULL CHECK (selected_delta_digest = '' OR length(selected_delta_digest) = 64),
    published               INTEGER NOT NULL CHECK (published IN (0, 1)),
    status                  TEXT    NOT NULL,
    reason                  TEXT    NOT NULL,
    replay_of               INTEGER REFERENCES proposals (id), fingerprint TEXT NOT NULL DEFAULT '',
    UNIQUE (block, event_index, subevent_index)
);
CREATE INDEX proposals_by_bytes ON proposals (arena_digest, content_hash);
CREATE TABLE proposal_transitions (
    proposal_id INTEGER NOT NULL REFERENCES proposals (id),
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    from_status TEXT    NOT NULL,
    to_status   TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    PRIMARY KEY (proposal_id, seq)
);
CREATE TABLE attempts (
    proposal_id      INTEGER NOT NULL REFERENCES proposals (id),
    seq              INTEGER NOT NULL CHECK (seq >= 1),
    stage            TEXT    NOT NULL CHECK (stage IN ('screen', 'qualification')),
    report_digest    TEXT    NOT NULL CHECK (length(report_digest) = 64),
    evidence_address TEXT    NOT NULL CHECK (length(evidence_address) = 64),
    decision         TEXT    NOT NULL CHECK (decision IN ('PASS', 'FAIL', 'NO_DECISION')),
    reason           TEXT    NOT NULL, settlement TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (proposal_id, seq)
);
CREATE TABLE settlement_events (
    sequence              INTEGER PRIMARY KEY CHECK (sequence >= 1),
    event_type            TEXT    NOT NULL CHECK (event_type <> ''),
    previous_event_digest TEXT    NOT NULL CHECK (previous_event_digest = '' OR length(previous_event_digest) = 64),
    body                  TEXT    NOT NULL,
    digest                TEXT    NOT NULL UNIQUE CHECK (length(digest) = 64)
);
CREATE TABLE evaluation_stacks (
    id             INTEGER PRIMARY KEY,
    stack_digest   TEXT    NOT NULL CHECK (length(stack_digest) = 64),
    tree_digest    TEXT    NOT NULL CHECK (length(tree_digest) = 64),
    hcl            TEXT    NOT NULL,
    event_sequence INTEGER REFERENCES settlement_events (sequence),
    current        INTEGER UNIQUE CHECK (current IS NULL OR current = 1)
);
CREATE TABLE crowns (
    event_sequence      INTEGER PRIMARY KEY REFERENCES settlement_events (sequence),
    arena_digest        TEXT    NOT NULL CHECK (length(arena_digest) = 64),
    target_id           TEXT    NOT NULL CHECK (target_id <> ''),
    contribution_digest TEXT    NOT NULL CHECK (length(contribution_digest) = 64),
    proposal_id         INTEGER REFERENCES proposals (id),
    hotkey              TEXT    NOT NULL CHECK (hotkey <> ''),
    speedup             TEXT    NOT NULL CHECK (speedup <> '')
);
CREATE TABLE standing_claims (
    arena_digest        TEXT    NOT NULL CHECK (length(arena_digest) = 64),
    target_id           TEXT    NOT NULL CHECK (target_id <> ''),
    target_spec_digest  TEXT    NOT NULL CHECK (length(target_spec_digest) = 64),
    contribution_digest TEXT    NOT NULL CHECK (length(contribution_digest) = 64),
    hotkey              TEXT    NOT NULL CHECK (hotkey <> ''),
    speedup_ppm         INTEGER NOT NULL CHECK (speedup_ppm > 1000000),
    crowned_block       INTEGER NOT NULL CHECK (crowned_block > 0),
    evidence_digest     TEXT    NOT NULL CHECK (length(evidence_digest) = 64),
    event_sequence      INTEGER NOT NULL REFERENCES settlement_events (sequence),
    PRIMARY KEY (arena_digest, target_id)
);
CREATE TABLE discovery_claims (
    event_sequence      INTEGER PRIMARY KEY REFERENCES settlement_events (sequence),
    arena_digest        TEXT    NOT NULL CHECK (length(arena_digest) = 64),
    contribution_digest TEXT    NOT NULL CHECK (length(contribution_digest) = 64),
    hotkey              TEXT    NOT NULL CHECK (hotkey <> ''),
    speedup_ppm         INTEGER NOT NULL CHECK (speedup_ppm > 1000000),
    awarded_block       INTEGER NOT NULL CHECK (awarded_block > 0),
    evidence_digest     TEXT    NOT NULL CHECK (length(evidence_digest) = 64)
);
CREATE TABLE settlement_outcomes (
    proposal_id      INTEGER NOT NULL REFERENCES proposals (id),
    seq              INTEGER NOT NULL CHECK (seq >= 1),
    plan_digest      TEXT    NOT NULL CHECK (length(plan_digest) = 64),
    candidate_digest TEXT    NOT NULL CHECK (length(candidate_digest) = 64),
    outcome          TEXT    NOT NULL CHECK (outcome IN ('CROWN', 'HOLD', 'DISCOVERY_BOUNTY')),
    reason           TEXT    NOT NULL CHECK (reason <> ''),
    -- The CROWN (or bounty) event the outcome made; NULL for a HOLD.
    event_sequence   INTEGER REFERENCES settlement_events (sequence),
    PRIMARY KEY (proposal_id, seq)
);
CREATE TABLE intake_events (
    sequence              INTEGER PRIMARY KEY CHECK (sequence >= 1),
    event_type            TEXT    NOT NULL CHECK (event_type <> ''),
    previous_event_digest TEXT    NOT NULL CHECK (previous_event_digest = '' OR length(previous_event_digest) = 64),
    body                  TEXT    NOT NULL,
    digest                TEXT    NOT NULL UNIQUE CHECK (length(digest) = 64)
);
CREATE TABLE copy_verdicts (
    proposal_id   INTEGER PRIMARY KEY REFERENCES proposals (id),
    copy_of       INTEGER REFERENCES proposals (id),
    seed          TEXT    NOT NULL,
    rule          TEXT    NOT NULL CHECK (rule IN ('payload', 'normalized_delta', 'containment')),
    detail        TEXT    NOT NULL CHECK (detail <> ''),
    cleared_event INTEGER UNIQUE REFERENCES intake_events (sequence),
    CHECK ((copy_of IS NULL) <> (seed = ''))
);
CREATE INDEX proposals_by_namespace ON proposals (arena_digest, target_id);
CREATE TABLE row_records (
    sequence               INTEGER PRIMARY KEY CHECK (sequence >= 1),
    event_type             TEXT    NOT NULL CHECK (event_type <> ''),
    previous_event_digest  TEXT    NOT NULL CHECK (previous_event_digest = '' OR length(previous_event_digest) = 64),
    body                   TEXT    NOT NULL,
    digest                 TEXT    NOT NULL UNIQUE CHECK (length(digest) = 64)
);
CREATE TABLE lease_events (
    sequence              INTEGER PRIMARY KEY CHECK (sequence >= 1),
    event_type            TEXT    NOT NULL CHECK (event_type <> ''),
    previous_event_digest TEXT    NOT NULL CHECK (previous_event_digest = '' OR length(previous_event_digest) = 64),
    body                  TEXT    NOT NULL,
    digest                TEXT    NOT NULL UNIQUE CHECK (length(digest) = 64),
    proposal_id           INTEGER NOT NULL REFERENCES proposals (id)
);
CREATE INDEX lease_events_by_proposal ON lease_events (proposal_id, sequence);
CREATE TABLE checkpoints (
    record_sequence INTEGER PRIMARY KEY REFERENCES row_records (sequence)
);
INSERT INTO schema_version VALUES (1,'0001_initial.sql','f3a01ce866ca57005cb90a05ebce1caee2021c8bfab471854a9627bdf143bf97');
INSERT INTO schema_version VALUES (2,'0002_settlement_outcomes.sql','acd43fa4f9f2da723b99ca441ef6f4a551df120d9b1a6b24f3f32e20d91398e0');
INSERT INTO schema_version VALUES (3,'0003_anti_copy.sql','53b656828ac9b15cac4aa1934798ac1772b0b83df6d7632f32ccfeea2c0ce072');
INSERT INTO schema_version VALUES (4,'0004_row_records.sql','7fed06f59d186d8496112cfaa3a38fac56195fcc0970802f4325c5152c52335e');
INSERT INTO schema_version VALUES (5,'0005_leases.sql','17293290b78dd329f143548509daf21a35cf96bf31055098f1f7da5792abe1d7');
INSERT INTO schema_version VALUES (6,'0006_checkpoints.sql','08ed6c2263e18ab0bfa72f7ba045855b1efcf2f1bb3ef9fee2c7a30ba72b9023');
INSERT INTO proposals VALUES (1,'572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5','a4cc5eeb70d272a7ede344c06883aef443c470cb986a108f22bd5261a61355fe','a4cc5eeb70d272a7ede344c06883aef443c470cb986a108f22bd5261a61355fe','hk-live',10,0,0,'norm.rmsnorm','d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19','1cc719cfc1323a00d100ae5bf7b2b41774f48f43cf6dcb2295927ed4d1587971','3b24747e05e62819fce0880215e50548983e1f22c9b1fb362510808269db4b8c',1,'published','lease_reclaimed: attempt 1 of 3 ended without a verdict while screening (expired); back in the queue from 2026-12-06T05:05:00Z',NULL,'');
INSERT INTO proposals VALUES (2,'572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5','ad6b1d4d095a377769b4807365a1167618bc79573e268d773877cf7599bddacc','ad6b1d4d095a377769b4807365a1167618bc79573e268d773877cf7599bddacc','hk-done',11,0,0,'norm.rmsnorm','d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19','38e8ba5e88df7c266c6385c1f6aab99a21cf6f613c519298a172ca723585ceed','aaf5c29c0fc8c86f61ee15827d43688df8f71c0d7f755d4f44be69bebd9ab8d6',1,'failed','operator refusal',NULL,'');
INSERT INTO proposals VALUES (3,'572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5','15cc92bb19e0361bb69503314479a80bec8eea06dd5ecac3801084b51d80cf07','15cc92bb19e0361bb69503314479a80bec8eea06dd5ecac3801084b51d80cf07','hkA',20,0,0,'norm.rmsnorm','5baaa199efb704d0792bfe13e9f5d712588123ee8177997df0601a4b27d6788d','aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca','629cb2aac54d7708eaaefabb7126c330f7cb278ba8394cde051d97bcf2a97f82',1,'published','published',NULL,'{"content_hash":"15cc92bb19e0361bb69503314479a80bec8eea06dd5ecac3801084b51d80cf07","files":[{"hashes":"00903ca8af3c204506fbb4250228d4d007129bb81e6428da0a239f5b1f5a29540a7afdabbd3929630b621330144fcc810c10d5aec21f329f0d412d0e3553ad090e2ddda4471e56990f0b123e2329adb3151e67ec272febf716bcd9375ae5c2b916d20e9c95593ef519fe86c83247465c1a43cf98f3b569fa1c2fe13f6f17f50b1d160dc3412a99831e142b0ae7cd42a01fd8b90dc60fb648207dfe49afdbb43821ea0e8af3e9c62a225a7d07364f014323c76f4ad8070513241e41062f3a772c24edee46288916c82643cf9e3797f4222721b1e33b68707c2cfd294f4e932b572ee41a2bb8076d892f15067129d05c4a2f17036a112253bb326e066e9ec77243338d44baaed4eaee36490bfe6e3a676a3a713924f16c6a573b1ab92d1ee08ca53b4f6bb9c113b95a3d1c0012e11d48793d1d5df389b3ebdb3f33ef1175a41e1a415943c117d1ff6c430b6ccee7c1857a459ac73ef40106a54788866a5a1543514993267f7bb08e514a3fbd0fcd974afd4acf84546ef5355e516d079bc099e8b354f71ced15d348945932c94b9d2be63a59c172980fbeecc25b794d58b64fe3715daa5ec029070f835f5afbca3ab04a7a62691dcb1ce9765962bc06924987fc5765685e28c920e12670726128a50d74b87a6f29d733b0215e8e1c95925f6316eca1a90d7865c694c4b53a939111cd91fdb71d744fb70e7f7e","normalized_sha256":"d2febf259566b816774df8abba642e160386b164e88a20ed3c37d50cd817a44d","path":"kernels/op.py","role":"python","tokens":166}],"normalized_delta_digest":"6db38c9293e9f6db18c612ce91227ec1958f30327f0629d6f6210c702145789b","schema_version":1,"selected_payload_digest":"aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca"}');
INSERT INTO proposals VALUES (4,'572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5','3dff701caeec58660e8eecb3130ca00c2e43a7b67cb37261e8b6f647c40e17a4','3dff701caeec58660e8eecb3130ca00c2e43a7b67cb37261e8b6f647c40e17a4','hkB',21,0,0,'norm.rmsnorm','5baaa199efb704d0792bfe13e9f5d712588123ee8177997df0601a4b27d6788d','aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca','629cb2aac54d7708eaaefabb7126c330f7cb278ba8394cde051d97bcf2a97f82',1,'failed','copy_of:3:payload',NULL,'{"content_hash":"3dff701caeec58660e8eecb3130ca00c2e43a7b67cb37261e8b6f647c40e17a4","files":[{"hashes":"00903ca8af3c204506fbb4250228d4d007129bb81e6428da0a239f5b1f5a29540a7afdabbd3929630b621330144fcc810c10d5aec21f329f0d412d0e3553ad090e2ddda4471e56990f0b123e2329adb3151e67ec272febf716bcd9375ae5c2b916d20e9c95593ef519fe86c83247465c1a43cf98f3b569fa1c2fe13f6f17f50b1d160dc3412a99831e142b0ae7cd42a01fd8b90dc60fb648207dfe49afdbb43821ea0e8af3e9c62a225a7d07364f014323c76f4ad8070513241e41062f3a772c24edee46288916c82643cf9e3797f4222721b1e33b68707c2cfd294f4e932b572ee41a2bb8076d892f15067129d05c4a2f17036a112253bb326e066e9ec77243338d44baaed4eaee36490bfe6e3a676a3a713924f16c6a573b1ab92d1ee08ca53b4f6bb9c113b95a3d1c0012e11d48793d1d5df389b3ebdb3f33ef1175a41e1a415943c117d1ff6c430b6ccee7c1857a459ac73ef40106a54788866a5a1543514993267f7bb08e514a3fbd0fcd974afd4acf84546ef5355e516d079bc099e8b354f71ced15d348945932c94b9d2be63a59c172980fbeecc25b794d58b64fe3715daa5ec029070f835f5afbca3ab04a7a62691dcb1ce9765962bc06924987fc5765685e28c920e12670726128a50d74b87a6f29d733b0215e8e1c95925f6316eca1a90d7865c694c4b53a939111cd91fdb71d744fb70e7f7e","normalized_sha256":"d2febf259566b816774df8abba642e160386b164e88a20ed3c37d50cd817a44d","path":"kernels/op.py","role":"python","tokens":166}],"normalized_delta_digest":"6db38c9293e9f6db18c612ce91227ec1958f30327f0629d6f6210c702145789b","schema_version":1,"selected_payload_digest":"aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca"}');
INSERT INTO proposals VALUES (5,'572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5','80b24356a960a225d947f5665bf0646de7716687a31fe89afc1c8d50460f8fcb','80b24356a960a225d947f5665bf0646de7716687a31fe89afc1c8d50460f8fcb','hk-after',30,0,0,'norm.rmsnorm','d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19','ebc6cd6a685baaf4898212d1cdfdabae9add4c8ef155d61cba59a381b34aacc6','5f36447528a7fbcf2260cfb7a95a892066c4bee151e406981b52376040bb2249',1,'published','published',NULL,'');
INSERT INTO proposal_transitions VALUES (1,1,'','reserved','finalized_reveal');
INSERT INTO proposal_transitions VALUES (1,2,'reserved','fetching','');
INSERT INTO proposal_transitions VALUES (1,3,'fetching','published','published');
INSERT INTO proposal_transitions VALUES (1,4,'published','screening','');
INSERT INTO proposal_transitions VALUES (1,5,'screening','published','lease_reclaimed: attempt 1 of 3 ended without a verdict while screening (expired); back in the queue from 2026-12-06T05:05:00Z');
INSERT INTO proposal_transitions VALUES (2,1,'','reserved','finalized_reveal');
INSERT INTO proposal_transitions VALUES (2,2,'reserved','fetching','');
INSERT INTO proposal_transitions VALUES (2,3,'fetching','published','published');
INSERT INTO proposal_transitions VALUES (2,4,'published','failed','operator refusal');
INSERT INTO proposal_transitions VALUES (3,1,'','reserved','finalized_reveal');
INSERT INTO proposal_transitions VALUES (3,2,'reserved','fetching','');
INSERT INTO proposal_transitions VALUES (3,3,'fetching','published','published');
INSERT INTO proposal_transitions VALUES (4,1,'','reserved','finalized_reveal');
INSERT INTO proposal_transitions VALUES (4,2,'reserved','fetching','');
INSERT INTO proposal_transitions VALUES (4,3,'fetching','published','published');
INSERT INTO proposal_transitions VALUES (4,4,'published','failed','copy_of:3:payload');
INSERT INTO proposal_transitions VALUES (5,1,'','reserved','finalized_reveal');
INSERT INTO proposal_transitions VALUES (5,2,'reserved','fetching','');
INSERT INTO proposal_transitions VALUES (5,3,'fetching','published','published');
INSERT INTO settlement_events VALUES (1,'CROWN','','{"candidate_digest":"e75c44736ae122cf1ec886b703515008e1be7dd934cdf94239d7edb202eb52df","event_type":"CROWN","from_stack_digest":"e946b692d546262f61cbd0cd44868c3f8881293902c86234b6ec5c94b4f37484","from_tree_digest":"73c9c87b242f801f15c1e2aa365967f8996bcb52e9cc20984cb6f85e30acba77","previous_event_digest":"","reason":"qualified_win","sequence":1,"subject_digest":"2628837fc9bf32bd8cb50df769096475a389539f74bb381f7420bfb316d13740","target_id":"norm.rmsnorm","to_stack_digest":"f69e1a4bdc3ab907c0a1f8c48222d4d0e78036853cc4edb704bdf0b7b9b7efd8","to_tree_digest":"ec8439e8a765c1467db16e5874cdfef3b7aad3c8739b4dada512744d94f29f26"}','fdca1d49e8a1746e25118c4ebade67a92c394507547d57ea7e877c42cf63b15b');
INSERT INTO settlement_events VALUES (2,'ADOPTION','fdca1d49e8a1746e25118c4ebade67a92c394507547d57ea7e877c42cf63b15b','{"candidate_digest":"e75c44736ae122cf1ec886b703515008e1be7dd934cdf94239d7edb202eb52df","event_type":"ADOPTION","from_stack_digest":"e946b692d546262f61cbd0cd44868c3f8881293902c86234b6ec5c94b4f37484","from_tree_digest":"73c9c87b242f801f15c1e2aa365967f8996bcb52e9cc20984cb6f85e30acba77","previous_event_digest":"fdca1d49e8a1746e25118c4ebade67a92c394507547d57ea7e877c42cf63b15b","reason":"qualified_win","sequence":2,"subject_digest":"2628837fc9bf32bd8cb50df769096475a389539f74bb381f7420bfb316d13740","target_id":"norm.rmsnorm","to_stack_digest":"f69e1a4bdc3ab907c0a1f8c48222d4d0e78036853cc4edb704bdf0b7b9b7efd8","to_tree_digest":"ec8439e8a765c1467db16e5874cdfef3b7aad3c8739b4dada512744d94f29f26"}','82f6f45be7b80ea441be97a37c1afa553daff2383d7b7e3a5a36bb12c413ef89');
INSERT INTO settlement_events VALUES (3,'STACK_TRANSITION','82f6f45be7b80ea441be97a37c1afa553daff2383d7b7e3a5a36bb12c413ef89','{"candidate_digest":"e75c44736ae122cf1ec886b703515008e1be7dd934cdf94239d7edb202eb52df","event_type":"STACK_TRANSITION","from_stack_digest":"e946b692d546262f61cbd0cd44868c3f8881293902c86234b6ec5c94b4f37484","from_tree_digest":"73c9c87b242f801f15c1e2aa365967f8996bcb52e9cc20984cb6f85e30acba77","previous_event_digest":"82f6f45be7b80ea441be97a37c1afa553daff2383d7b7e3a5a36bb12c413ef89","reason":"qualified_win","sequence":3,"subject_digest":"2628837fc9bf32bd8cb50df769096475a389539f74bb381f7420bfb316d13740","target_id":"norm.rmsnorm","to_stack_digest":"f69e1a4bdc3ab907c0a1f8c48222d4d0e78036853cc4edb704bdf0b7b9b7efd8","to_tree_digest":"ec8439e8a765c1467db16e5874cdfef3b7aad3c8739b4dada512744d94f29f26"}','82d8a5642f5a72e9ea4c8cc43ca87d25ce479765f6f694edf06928973f497f94');
INSERT INTO settlement_events VALUES (4,'CROWN','82d8a5642f5a72e9ea4c8cc43ca87d25ce479765f6f694edf06928973f497f94','{"candidate_digest":"005808f06bd59d2cf6a8e70af8923c0f838b33fcb12c732ae1a38a4ab23f886f","event_type":"CROWN","from_stack_digest":"f69e1a4bdc3ab907c0a1f8c48222d4d0e78036853cc4edb704bdf0b7b9b7efd8","from_tree_digest":"ec8439e8a765c1467db16e5874cdfef3b7aad3c8739b4dada512744d94f29f26","previous_event_digest":"82d8a5642f5a72e9ea4c8cc43ca87d25ce479765f6f694edf06928973f497f94","reason":"qualified_win","sequence":4,"subject_digest":"58c3639b02c0917a98efd92386155d36782f076e9b21d422e2340d5e72513ba3","target_id":"norm.rmsnorm","to_stack_digest":"30daf4c549b56c8b69f24cee4df6de0ddea241f1a683ff192622f65c962975dd","to_tree_digest":"a97ff24c53168c556fa9a121a4e28f75b9ef5867beace69c6354403bb3948f16"}','2143aae2ce8ed3459e9990b0638f03e20d2980db6f4168284b6253ffa062a525');
INSERT INTO settlement_events VALUES (5,'ADOPTION','2143aae2ce8ed3459e9990b0638f03e20d2980db6f4168284b6253ffa062a525','{"candidate_digest":"005808f06bd59d2cf6a8e70af8923c0f838b33fcb12c732ae1a38a4ab23f886f","event_type":"ADOPTION","from_stack_digest":"f69e1a4bdc3ab907c0a1f8c48222d4d0e78036853cc4edb704bdf0b7b9b7efd8","from_tree_digest":"ec8439e8a765c1467db16e5874cdfef3b7aad3c8739b4dada512744d94f29f26","previous_event_digest":"2143aae2ce8ed3459e9990b0638f03e20d2980db6f4168284b6253ffa062a525","reason":"qualified_win","sequence":5,"subject_digest":"58c3639b02c0917a98efd92386155d36782f076e9b21d422e2340d5e72513ba3","target_id":"norm.rmsnorm","to_stack_digest":"30daf4c549b56c8b69f24cee4df6de0ddea241f1a683ff192622f65c962975dd","to_tree_digest":"a97ff24c53168c556fa9a121a4e28f75b9ef5867beace69c6354403bb3948f16"}','2adc30830652ffe68dc7a685914aae37d30ba67ef6831aac68fecb149cd48c2b');
INSERT INTO settlement_events VALUES (6,'STACK_TRANSITION','2adc30830652ffe68dc7a685914aae37d30ba67ef6831aac68fecb149cd48c2b','{"candidate_digest":"005808f06bd59d2cf6a8e70af8923c0f838b33fcb12c732ae1a38a4ab23f886f","event_type":"STACK_TRANSITION","from_stack_digest":"f69e1a4bdc3ab907c0a1f8c48222d4d0e78036853cc4edb704bdf0b7b9b7efd8","from_tree_digest":"ec8439e8a765c1467db16e5874cdfef3b7aad3c8739b4dada512744d94f29f26","previous_event_digest":"2adc30830652ffe68dc7a685914aae37d30ba67ef6831aac68fecb149cd48c2b","reason":"qualified_win","sequence":6,"subject_digest":"58c3639b02c0917a98efd92386155d36782f076e9b21d422e2340d5e72513ba3","target_id":"norm.rmsnorm","to_stack_digest":"30daf4c549b56c8b69f24cee4df6de0ddea241f1a683ff192622f65c962975dd","to_tree_digest":"a97ff24c53168c556fa9a121a4e28f75b9ef5867beace69c6354403bb3948f16"}','6f65f0b3957654b44aca6f35cf51c38573b40cd63da7861562d582490809b2f7');
INSERT INTO evaluation_stacks VALUES (1,'e946b692d546262f61cbd0cd44868c3f8881293902c86234b6ec5c94b4f37484','73c9c87b242f801f15c1e2aa365967f8996bcb52e9cc20984cb6f85e30acba77','# stack 0
',NULL,NULL);
INSERT INTO evaluation_stacks VALUES (2,'f69e1a4bdc3ab907c0a1f8c48222d4d0e78036853cc4edb704bdf0b7b9b7efd8','ec8439e8a765c1467db16e5874cdfef3b7aad3c8739b4dada512744d94f29f26','# stack 1
',3,NULL);
INSERT INTO evaluation_stacks VALUES (3,'30daf4c549b56c8b69f24cee4df6de0ddea241f1a683ff192622f65c962975dd','a97ff24c53168c556fa9a121a4e28f75b9ef5867beace69c6354403bb3948f16','# stack 2
',6,1);
INSERT INTO crowns VALUES (1,'572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5','norm.rmsnorm','256be3209fdf3c1605fa8d2a2da4f713126f0eb92d39b986b83ee9251b35b259',NULL,'hk','1.0224');
INSERT INTO crowns VALUES (4,'572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5','norm.rmsnorm','0fee9a0cb753ac0b068e1c3451d09258e8519f7f7d3e7e26ebb95d6976253647',NULL,'hk','1.0224');
INSERT INTO standing_claims VALUES ('572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5','norm.rmsnorm','d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19','0fee9a0cb753ac0b068e1c3451d09258e8519f7f7d3e7e26ebb95d6976253647','hk',1022400,2,'583d51345b1c9f7fb84909491b75c9599e967e941125a045a3bf1e54bb81cd60',4);
INSERT INTO copy_verdicts VALUES (4,3,'','payload','payload: selected payload aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca equals the earlier proposal''s',NULL);
INSERT INTO row_records VALUES (1,'stack_init','','{"event_type":"stack_init","previous_event_digest":"","rows":{"evaluation_stacks":{"1":{"current":1,"event_sequence":null,"hcl":"# stack 0\n","id":1,"stack_digest":"e946b692d546262f61cbd0cd44868c3f8881293902c86234b6ec5c94b4f37484","tree_digest":"73c9c87b242f801f15c1e2aa365967f8996bcb52e9cc20984cb6f85e30acba77"}}},"sequence":1}','4978582d1346f7536b1228bbb2d7f4067709b31d727becc1040f2a691a2f57cd');
INSERT INTO row_records VALUES (2,'settlement','4978582d1346f7536b1228bbb2d7f4067709b31d727becc1040f2a691a2f57cd','{"event_type":"settlement","previous_event_digest":"4978582d1346f7536b1228bbb2d7f4067709b31d727becc1040f2a691a2f57cd","rows":{"crowns":{"1":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","contribution_digest":"256be3209fdf3c1605fa8d2a2da4f713126f0eb92d39b986b83ee9251b35b259","event_sequence":1,"hotkey":"hk","proposal_id":null,"speedup":"1.0224","target_id":"norm.rmsnorm"}},"evaluation_stacks":{"1":{"current":null,"event_sequence":null,"hcl":"# stack 0\n","id":1,"stack_digest":"e946b692d546262f61cbd0cd44868c3f8881293902c86234b6ec5c94b4f37484","tree_digest":"73c9c87b242f801f15c1e2aa365967f8996bcb52e9cc20984cb6f85e30acba77"},"2":{"current":1,"event_sequence":3,"hcl":"# stack 1\n","id":2,"stack_digest":"f69e1a4bdc3ab907c0a1f8c48222d4d0e78036853cc4edb704bdf0b7b9b7efd8","tree_digest":"ec8439e8a765c1467db16e5874cdfef3b7aad3c8739b4dada512744d94f29f26"}},"standing_claims":{"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5/norm.rmsnorm":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","contribution_digest":"256be3209fdf3c1605fa8d2a2da4f713126f0eb92d39b986b83ee9251b35b259","crowned_block":1,"event_sequence":1,"evidence_digest":"b025627063c0e16d936da435b5cd0a091c81d3e62d97edc793ef393160f5c321","hotkey":"hk","speedup_ppm":1022400,"target_id":"norm.rmsnorm","target_spec_digest":"d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19"}}},"sequence":2}','70c7c0abadc8edcf8c00558dc15bef19222b027ae737b6e2d886709725e712cf');
INSERT INTO row_records VALUES (3,'intake','70c7c0abadc8edcf8c00558dc15bef19222b027ae737b6e2d886709725e712cf','{"event_type":"intake","previous_event_digest":"70c7c0abadc8edcf8c00558dc15bef19222b027ae737b6e2d886709725e712cf","rows":{"proposals":{"1":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","block":10,"committed_content_hash":"a4cc5eeb70d272a7ede344c06883aef443c470cb986a108f22bd5261a61355fe","content_hash":"a4cc5eeb70d272a7ede344c06883aef443c470cb986a108f22bd5261a61355fe","event_index":0,"fingerprint":"","hotkey":"hk-live","id":1,"published":1,"replay_of":null,"selected_delta_digest":"3b24747e05e62819fce0880215e50548983e1f22c9b1fb362510808269db4b8c","selected_payload_digest":"1cc719cfc1323a00d100ae5bf7b2b41774f48f43cf6dcb2295927ed4d1587971","subevent_index":0,"target_id":"norm.rmsnorm","target_spec_digest":"d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19"}}},"sequence":3}','5b7b6c7332eeb4e2d5f6e997844f8f955324a12be232542caf169f79da9af033');
INSERT INTO row_records VALUES (4,'intake','5b7b6c7332eeb4e2d5f6e997844f8f955324a12be232542caf169f79da9af033','{"event_type":"intake","previous_event_digest":"5b7b6c7332eeb4e2d5f6e997844f8f955324a12be232542caf169f79da9af033","rows":{"proposals":{"2":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","block":11,"committed_content_hash":"ad6b1d4d095a377769b4807365a1167618bc79573e268d773877cf7599bddacc","content_hash":"ad6b1d4d095a377769b4807365a1167618bc79573e268d773877cf7599bddacc","event_index":0,"fingerprint":"","hotkey":"hk-done","id":2,"published":1,"replay_of":null,"selected_delta_digest":"aaf5c29c0fc8c86f61ee15827d43688df8f71c0d7f755d4f44be69bebd9ab8d6","selected_payload_digest":"38e8ba5e88df7c266c6385c1f6aab99a21cf6f613c519298a172ca723585ceed","subevent_index":0,"target_id":"norm.rmsnorm","target_spec_digest":"d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19"}}},"sequence":4}','086bb22dce6ba77b627a23d00655cdade7164b40f1e7db8fb6a1dea266cb2256');
INSERT INTO row_records VALUES (5,'intake','086bb22dce6ba77b627a23d00655cdade7164b40f1e7db8fb6a1dea266cb2256','{"event_type":"intake","previous_event_digest":"086bb22dce6ba77b627a23d00655cdade7164b40f1e7db8fb6a1dea266cb2256","rows":{"proposals":{"3":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","block":20,"committed_content_hash":"15cc92bb19e0361bb69503314479a80bec8eea06dd5ecac3801084b51d80cf07","content_hash":"15cc92bb19e0361bb69503314479a80bec8eea06dd5ecac3801084b51d80cf07","event_index":0,"fingerprint":"{\"content_hash\":\"15cc92bb19e0361bb69503314479a80bec8eea06dd5ecac3801084b51d80cf07\",\"files\":[{\"hashes\":\"00903ca8af3c204506fbb4250228d4d007129bb81e6428da0a239f5b1f5a29540a7afdabbd3929630b621330144fcc810c10d5aec21f329f0d412d0e3553ad090e2ddda4471e56990f0b123e2329adb3151e67ec272febf716bcd9375ae5c2b916d20e9c95593ef519fe86c83247465c1a43cf98f3b569fa1c2fe13f6f17f50b1d160dc3412a99831e142b0ae7cd42a01fd8b90dc60fb648207dfe49afdbb43821ea0e8af3e9c62a225a7d07364f014323c76f4ad8070513241e41062f3a772c24edee46288916c82643cf9e3797f4222721b1e33b68707c2cfd294f4e932b572ee41a2bb8076d892f15067129d05c4a2f17036a112253bb326e066e9ec77243338d44baaed4eaee36490bfe6e3a676a3a713924f16c6a573b1ab92d1ee08ca53b4f6bb9c113b95a3d1c0012e11d48793d1d5df389b3ebdb3f33ef1175a41e1a415943c117d1ff6c430b6ccee7c1857a459ac73ef40106a54788866a5a1543514993267f7bb08e514a3fbd0fcd974afd4acf84546ef5355e516d079bc099e8b354f71ced15d348945932c94b9d2be63a59c172980fbeecc25b794d58b64fe3715daa5ec029070f835f5afbca3ab04a7a62691dcb1ce9765962bc06924987fc5765685e28c920e12670726128a50d74b87a6f29d733b0215e8e1c95925f6316eca1a90d7865c694c4b53a939111cd91fdb71d744fb70e7f7e\",\"normalized_sha256\":\"d2febf259566b816774df8abba642e160386b164e88a20ed3c37d50cd817a44d\",\"path\":\"kernels/op.py\",\"role\":\"python\",\"tokens\":166}],\"normalized_delta_digest\":\"6db38c9293e9f6db18c612ce91227ec1958f30327f0629d6f6210c702145789b\",\"schema_version\":1,\"selected_payload_digest\":\"aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca\"}","hotkey":"hkA","id":3,"published":1,"replay_of":null,"selected_delta_digest":"629cb2aac54d7708eaaefabb7126c330f7cb278ba8394cde051d97bcf2a97f82","selected_payload_digest":"aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca","subevent_index":0,"target_id":"norm.rmsnorm","target_spec_digest":"5baaa199efb704d0792bfe13e9f5d712588123ee8177997df0601a4b27d6788d"}}},"sequence":5}','0267ef781c9109581cbe85ddfd735edfdf9f7f0d664488c6af1f1e15ca626b7b');
INSERT INTO row_records VALUES (6,'intake','0267ef781c9109581cbe85ddfd735edfdf9f7f0d664488c6af1f1e15ca626b7b','{"event_type":"intake","previous_event_digest":"0267ef781c9109581cbe85ddfd735edfdf9f7f0d664488c6af1f1e15ca626b7b","rows":{"proposals":{"4":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","block":21,"committed_content_hash":"3dff701caeec58660e8eecb3130ca00c2e43a7b67cb37261e8b6f647c40e17a4","content_hash":"3dff701caeec58660e8eecb3130ca00c2e43a7b67cb37261e8b6f647c40e17a4","event_index":0,"fingerprint":"{\"content_hash\":\"3dff701caeec58660e8eecb3130ca00c2e43a7b67cb37261e8b6f647c40e17a4\",\"files\":[{\"hashes\":\"00903ca8af3c204506fbb4250228d4d007129bb81e6428da0a239f5b1f5a29540a7afdabbd3929630b621330144fcc810c10d5aec21f329f0d412d0e3553ad090e2ddda4471e56990f0b123e2329adb3151e67ec272febf716bcd9375ae5c2b916d20e9c95593ef519fe86c83247465c1a43cf98f3b569fa1c2fe13f6f17f50b1d160dc3412a99831e142b0ae7cd42a01fd8b90dc60fb648207dfe49afdbb43821ea0e8af3e9c62a225a7d07364f014323c76f4ad8070513241e41062f3a772c24edee46288916c82643cf9e3797f4222721b1e33b68707c2cfd294f4e932b572ee41a2bb8076d892f15067129d05c4a2f17036a112253bb326e066e9ec77243338d44baaed4eaee36490bfe6e3a676a3a713924f16c6a573b1ab92d1ee08ca53b4f6bb9c113b95a3d1c0012e11d48793d1d5df389b3ebdb3f33ef1175a41e1a415943c117d1ff6c430b6ccee7c1857a459ac73ef40106a54788866a5a1543514993267f7bb08e514a3fbd0fcd974afd4acf84546ef5355e516d079bc099e8b354f71ced15d348945932c94b9d2be63a59c172980fbeecc25b794d58b64fe3715daa5ec029070f835f5afbca3ab04a7a62691dcb1ce9765962bc06924987fc5765685e28c920e12670726128a50d74b87a6f29d733b0215e8e1c95925f6316eca1a90d7865c694c4b53a939111cd91fdb71d744fb70e7f7e\",\"normalized_sha256\":\"d2febf259566b816774df8abba642e160386b164e88a20ed3c37d50cd817a44d\",\"path\":\"kernels/op.py\",\"role\":\"python\",\"tokens\":166}],\"normalized_delta_digest\":\"6db38c9293e9f6db18c612ce91227ec1958f30327f0629d6f6210c702145789b\",\"schema_version\":1,\"selected_payload_digest\":\"aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca\"}","hotkey":"hkB","id":4,"published":1,"replay_of":null,"selected_delta_digest":"629cb2aac54d7708eaaefabb7126c330f7cb278ba8394cde051d97bcf2a97f82","selected_payload_digest":"aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca","subevent_index":0,"target_id":"norm.rmsnorm","target_spec_digest":"5baaa199efb704d0792bfe13e9f5d712588123ee8177997df0601a4b27d6788d"}}},"sequence":6}','45cb59d799fb987e8f7cd5b217fa1ba7abcf6ab1f2e83dbc77abc6887db691e4');
INSERT INTO row_records VALUES (7,'checkpoint','45cb59d799fb987e8f7cd5b217fa1ba7abcf6ab1f2e83dbc77abc6887db691e4','{"event_type":"checkpoint","heads":{"intake_events":{"digest":"","sequence":0},"lease_events":{"digest":"e4f6861759600b62bef632afd6b39dc769ea1f27382a91101ecbcd9cd5d23062","sequence":2},"settlement_events":{"digest":"82d8a5642f5a72e9ea4c8cc43ca87d25ce479765f6f694edf06928973f497f94","sequence":3}},"leases":{"1":{"attempts":1,"expires_at":"2026-12-06T04:00:00Z","holder":{"host":"gpu-7","pid":20473,"run":"23fbd9b39cb81779","work_dir":""},"live":false,"lost":1,"not_before":"2026-12-06T05:05:00Z","taken_at":"2026-12-06T03:00:00Z"}},"previous_event_digest":"45cb59d799fb987e8f7cd5b217fa1ba7abcf6ab1f2e83dbc77abc6887db691e4","rows":{"evaluation_stacks":{"2":{"current":1,"event_sequence":3,"hcl":"# stack 1\n","id":2,"stack_digest":"f69e1a4bdc3ab907c0a1f8c48222d4d0e78036853cc4edb704bdf0b7b9b7efd8","tree_digest":"ec8439e8a765c1467db16e5874cdfef3b7aad3c8739b4dada512744d94f29f26"}},"proposals":{"1":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","block":10,"committed_content_hash":"a4cc5eeb70d272a7ede344c06883aef443c470cb986a108f22bd5261a61355fe","content_hash":"a4cc5eeb70d272a7ede344c06883aef443c470cb986a108f22bd5261a61355fe","event_index":0,"fingerprint":"","hotkey":"hk-live","id":1,"published":1,"replay_of":null,"selected_delta_digest":"3b24747e05e62819fce0880215e50548983e1f22c9b1fb362510808269db4b8c","selected_payload_digest":"1cc719cfc1323a00d100ae5bf7b2b41774f48f43cf6dcb2295927ed4d1587971","subevent_index":0,"target_id":"norm.rmsnorm","target_spec_digest":"d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19"},"3":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","block":20,"committed_content_hash":"15cc92bb19e0361bb69503314479a80bec8eea06dd5ecac3801084b51d80cf07","content_hash":"15cc92bb19e0361bb69503314479a80bec8eea06dd5ecac3801084b51d80cf07","event_index":0,"fingerprint":"{\"content_hash\":\"15cc92bb19e0361bb69503314479a80bec8eea06dd5ecac3801084b51d80cf07\",\"files\":[{\"hashes\":\"00903ca8af3c204506fbb4250228d4d007129bb81e6428da0a239f5b1f5a29540a7afdabbd3929630b621330144fcc810c10d5aec21f329f0d412d0e3553ad090e2ddda4471e56990f0b123e2329adb3151e67ec272febf716bcd9375ae5c2b916d20e9c95593ef519fe86c83247465c1a43cf98f3b569fa1c2fe13f6f17f50b1d160dc3412a99831e142b0ae7cd42a01fd8b90dc60fb648207dfe49afdbb43821ea0e8af3e9c62a225a7d07364f014323c76f4ad8070513241e41062f3a772c24edee46288916c82643cf9e3797f4222721b1e33b68707c2cfd294f4e932b572ee41a2bb8076d892f15067129d05c4a2f17036a112253bb326e066e9ec77243338d44baaed4eaee36490bfe6e3a676a3a713924f16c6a573b1ab92d1ee08ca53b4f6bb9c113b95a3d1c0012e11d48793d1d5df389b3ebdb3f33ef1175a41e1a415943c117d1ff6c430b6ccee7c1857a459ac73ef40106a54788866a5a1543514993267f7bb08e514a3fbd0fcd974afd4acf84546ef5355e516d079bc099e8b354f71ced15d348945932c94b9d2be63a59c172980fbeecc25b794d58b64fe3715daa5ec029070f835f5afbca3ab04a7a62691dcb1ce9765962bc06924987fc5765685e28c920e12670726128a50d74b87a6f29d733b0215e8e1c95925f6316eca1a90d7865c694c4b53a939111cd91fdb71d744fb70e7f7e\",\"normalized_sha256\":\"d2febf259566b816774df8abba642e160386b164e88a20ed3c37d50cd817a44d\",\"path\":\"kernels/op.py\",\"role\":\"python\",\"tokens\":166}],\"normalized_delta_digest\":\"6db38c9293e9f6db18c612ce91227ec1958f30327f0629d6f6210c702145789b\",\"schema_version\":1,\"selected_payload_digest\":\"aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca\"}","hotkey":"hkA","id":3,"published":1,"replay_of":null,"selected_delta_digest":"629cb2aac54d7708eaaefabb7126c330f7cb278ba8394cde051d97bcf2a97f82","selected_payload_digest":"aa4f4c7fc0f92add9fcefc640e54a831ddbd5e9976cc14e50d030f1fe2189bca","subevent_index":0,"target_id":"norm.rmsnorm","target_spec_digest":"5baaa199efb704d0792bfe13e9f5d712588123ee8177997df0601a4b27d6788d"}},"standing_claims":{"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5/norm.rmsnorm":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","contribution_digest":"256be3209fdf3c1605fa8d2a2da4f713126f0eb92d39b986b83ee9251b35b259","crowned_block":1,"event_sequence":1,"evidence_digest":"b025627063c0e16d936da435b5cd0a091c81d3e62d97edc793ef393160f5c321","hotkey":"hk","speedup_ppm":1022400,"target_id":"norm.rmsnorm","target_spec_digest":"d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19"}}},"sequence":7}','b87335636e5982e2d76c2db07ee3aa57ee4806b41d4bf57aa15ad5f74ab1a209');
INSERT INTO row_records VALUES (8,'settlement','b87335636e5982e2d76c2db07ee3aa57ee4806b41d4bf57aa15ad5f74ab1a209','{"event_type":"settlement","previous_event_digest":"b87335636e5982e2d76c2db07ee3aa57ee4806b41d4bf57aa15ad5f74ab1a209","rows":{"crowns":{"4":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","contribution_digest":"0fee9a0cb753ac0b068e1c3451d09258e8519f7f7d3e7e26ebb95d6976253647","event_sequence":4,"hotkey":"hk","proposal_id":null,"speedup":"1.0224","target_id":"norm.rmsnorm"}},"evaluation_stacks":{"2":{"current":null,"event_sequence":3,"hcl":"# stack 1\n","id":2,"stack_digest":"f69e1a4bdc3ab907c0a1f8c48222d4d0e78036853cc4edb704bdf0b7b9b7efd8","tree_digest":"ec8439e8a765c1467db16e5874cdfef3b7aad3c8739b4dada512744d94f29f26"},"3":{"current":1,"event_sequence":6,"hcl":"# stack 2\n","id":3,"stack_digest":"30daf4c549b56c8b69f24cee4df6de0ddea241f1a683ff192622f65c962975dd","tree_digest":"a97ff24c53168c556fa9a121a4e28f75b9ef5867beace69c6354403bb3948f16"}},"standing_claims":{"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5/norm.rmsnorm":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","contribution_digest":"0fee9a0cb753ac0b068e1c3451d09258e8519f7f7d3e7e26ebb95d6976253647","crowned_block":2,"event_sequence":4,"evidence_digest":"583d51345b1c9f7fb84909491b75c9599e967e941125a045a3bf1e54bb81cd60","hotkey":"hk","speedup_ppm":1022400,"target_id":"norm.rmsnorm","target_spec_digest":"d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19"}}},"sequence":8}','f8f76ba04f5245466b69a10e837d392e482dbabbceccf6917302ad6399cb6697');
INSERT INTO row_records VALUES (9,'intake','f8f76ba04f5245466b69a10e837d392e482dbabbceccf6917302ad6399cb6697','{"event_type":"intake","previous_event_digest":"f8f76ba04f5245466b69a10e837d392e482dbabbceccf6917302ad6399cb6697","rows":{"proposals":{"5":{"arena_digest":"572e31f55b6ac1b13fd5f5665d44bef1e3474ccf39b983428d4d8c4493d041c5","block":30,"committed_content_hash":"80b24356a960a225d947f5665bf0646de7716687a31fe89afc1c8d50460f8fcb","content_hash":"80b24356a960a225d947f5665bf0646de7716687a31fe89afc1c8d50460f8fcb","event_index":0,"fingerprint":"","hotkey":"hk-after","id":5,"published":1,"replay_of":null,"selected_delta_digest":"5f36447528a7fbcf2260cfb7a95a892066c4bee151e406981b52376040bb2249","selected_payload_digest":"ebc6cd6a685baaf4898212d1cdfdabae9add4c8ef155d61cba59a381b34aacc6","subevent_index":0,"target_id":"norm.rmsnorm","target_spec_digest":"d4f02eaafd1a9e9de7d10972ca8e47fa7a985825c3c9c1e249c72683cb3e4f19"}}},"sequence":9}','58a9c190285719f7ff6a762b19a96cb913ecd599849a5d52ca8ad9bbdc8456b0');
INSERT INTO lease_events VALUES (1,'lease_taken','','{"at":"2026-12-06T03:00:00Z","attempt":1,"event_type":"lease_taken","expires_at":"2026-12-06T04:00:00Z","holder":{"host":"gpu-7","pid":20473,"run":"23fbd9b39cb81779","work_dir":""},"previous_event_digest":"","proposal_id":1,"sequence":1}','c67e55eff9ffae94f250bf5f245f337d5ec35fc1c0b845f188e29f761710e071',1);
INSERT INTO lease_events VALUES (2,'lease_reclaimed','c67e55eff9ffae94f250bf5f245f337d5ec35fc1c0b845f188e29f761710e071','{"at":"2026-12-06T05:00:00Z","attempt":1,"cause":"expired","event_type":"lease_reclaimed","holder":{"host":"gpu-7","pid":20473,"run":"23fbd9b39cb81779","work_dir":""},"max_attempts":3,"not_before":"2026-12-06T05:05:00Z","outcome":"published","previous_event_digest":"c67e55eff9ffae94f250bf5f245f337d5ec35fc1c0b845f188e29f761710e071","proposal_id":1,"sequence":2,"status":"screening"}','e4f6861759600b62bef632afd6b39dc769ea1f27382a91101ecbcd9cd5d23062',1);
INSERT INTO checkpoints VALUES (7);
