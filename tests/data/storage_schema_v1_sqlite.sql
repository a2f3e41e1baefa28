-- MarginLab schema version 1 as create_all wrote it (SQLite), before migrations: statements end with ';' lines
CREATE TABLE schema_info (
	id INTEGER NOT NULL,
	version INTEGER NOT NULL,
	PRIMARY KEY (id)
)
;
CREATE TABLE datasets (
	id INTEGER NOT NULL,
	name VARCHAR(200) NOT NULL,
	source TEXT NOT NULL,
	feature_names JSON NOT NULL,
	n_rows INTEGER NOT NULL,
	n_features INTEGER NOT NULL,
	features BLOB NOT NULL,
	true_labels BLOB,
	display_kind VARCHAR(16) NOT NULL,
	image_width INTEGER,
	image_height INTEGER,
	text_column VARCHAR(200),
	content_hash VARCHAR(64) NOT NULL,
	meta JSON NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	CONSTRAINT ck_dataset_display_kind CHECK (display_kind IN ('table', 'image', 'text')),
	CONSTRAINT ck_dataset_shape CHECK (n_rows > 0 AND n_features > 0),
	UNIQUE (content_hash)
)
;
CREATE TABLE annotators (
	id INTEGER NOT NULL,
	name VARCHAR(200) NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (name)
)
;
CREATE TABLE items (
	id INTEGER NOT NULL,
	dataset_id INTEGER NOT NULL,
	position INTEGER NOT NULL,
	external_key VARCHAR(500),
	display_text TEXT,
	PRIMARY KEY (id),
	CONSTRAINT uq_item_position UNIQUE (dataset_id, position),
	FOREIGN KEY(dataset_id) REFERENCES datasets (id) ON DELETE CASCADE
)
;
CREATE TABLE labelling_sessions (
	id INTEGER NOT NULL,
	dataset_id INTEGER NOT NULL,
	annotator_id INTEGER NOT NULL,
	strategy VARCHAR(64) NOT NULL,
	solver VARCHAR(64) NOT NULL,
	solver_params JSON NOT NULL,
	seed INTEGER,
	status VARCHAR(16) NOT NULL,
	created_at DATETIME NOT NULL,
	updated_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	CONSTRAINT ck_session_status CHECK (status IN ('active', 'closed')),
	FOREIGN KEY(dataset_id) REFERENCES datasets (id) ON DELETE CASCADE,
	FOREIGN KEY(annotator_id) REFERENCES annotators (id)
)
;
CREATE INDEX ix_session_dataset_status ON labelling_sessions (dataset_id, status)
;
CREATE TABLE comparison_results (
	id INTEGER NOT NULL,
	dataset_id INTEGER,
	config JSON NOT NULL,
	rows_csv TEXT NOT NULL,
	summary JSON NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(dataset_id) REFERENCES datasets (id) ON DELETE CASCADE
)
;
CREATE INDEX ix_comparison_results_dataset_id ON comparison_results (dataset_id)
;
CREATE TABLE labels (
	id INTEGER NOT NULL,
	session_id INTEGER NOT NULL,
	item_id INTEGER NOT NULL,
	annotator_id INTEGER NOT NULL,
	value SMALLINT NOT NULL,
	created_at DATETIME NOT NULL,
	strategy VARCHAR(64) NOT NULL,
	solver VARCHAR(64) NOT NULL,
	decision_value FLOAT,
	model_version INTEGER NOT NULL,
	update_ms FLOAT,
	query_ms FLOAT,
	undone_at DATETIME,
	PRIMARY KEY (id),
	CONSTRAINT ck_label_value CHECK (value IN (-1, 0, 1)),
	FOREIGN KEY(session_id) REFERENCES labelling_sessions (id) ON DELETE CASCADE,
	FOREIGN KEY(item_id) REFERENCES items (id) ON DELETE CASCADE,
	FOREIGN KEY(annotator_id) REFERENCES annotators (id)
)
;
CREATE INDEX ix_labels_annotator_id ON labels (annotator_id)
;
CREATE INDEX ix_labels_item_id ON labels (item_id)
;
CREATE INDEX ix_label_session_order ON labels (session_id, id)
;
CREATE UNIQUE INDEX uq_active_label_per_item ON labels (session_id, item_id) WHERE undone_at IS NULL
;
CREATE TABLE model_snapshots (
	id INTEGER NOT NULL,
	session_id INTEGER NOT NULL,
	n_events INTEGER NOT NULL,
	last_label_id INTEGER,
	arrays BLOB NOT NULL,
	meta JSON NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(session_id) REFERENCES labelling_sessions (id) ON DELETE CASCADE
)
;
CREATE INDEX ix_snapshot_session_events ON model_snapshots (session_id, n_events)
;
