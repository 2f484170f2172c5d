-- Freshness and labels (docs/api.md, "Freshness").

-- The newest item of each news source, for meta.stale of the news and event
-- reads: one descent per source of the returned rows.
create index news_source_published_idx on news (source, published_at desc);

-- Where each broker code came from, for meta.source of the instrument reads:
-- the demo's codes are synthetic mappings, not a broker's. A code stored
-- without one (before this, or by hand) carries the instrument master's label,
-- as an upload without brokerCodesSource gives a new code.
alter table instrument_broker_codes
  add column source text not null default 'mds-reference' check (length(source) between 1 and 300);
