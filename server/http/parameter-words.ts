// What a parameter is, for the parameters whose schema carries no
// description: by `<operationId> <name>` for one operation, else by name
// (http/openapi.ts looks up the first, then the second). A description on the
// schema itself wins over these.

const INSTRUMENT_ID = "the instrument's id (a UUID); `GET /v1/instruments?query=…` finds it by symbol or name";
const EXPORT_ID = "the export job's id, as `POST /v1/exports` answered it (`data.id`)";
const ID_LIST = 'comma-separated instrument ids (UUIDs); a repeated id counts once';

export const PUBLIC_PARAMETER_WORDS: Readonly<Record<string, string>> = {
  id: INSTRUMENT_ID,
  'getExport id': EXPORT_ID,
  'deleteExport id': EXPORT_ID,
  'getExportFile id': EXPORT_ID,
  'getExportFile name':
    "one of the job's files, as its manifest names it (`data.files[].name`): the year (daily prices) or the month (intraday bars), then the format",
  'getOptionContract id': "the option contract's id, as a chain read (`GET /v1/instruments/{id}/options`) gives it in `contract.id`",
  ids: `${ID_LIST}; each is answered, or listed as not found`,
  instrumentIds: ID_LIST,
  'getCorrelations instrumentIds': `${ID_LIST}; at least two`,
  benchmarkId: 'the instrument to regress on (an index such as the S&P 500, or any instrument with daily bars): its id',
  method: 'pearson: the sample correlation of the log returns; spearman: the Pearson correlation of their ranks',
  adjusted: 'true: prices adjusted backward for the splits and dividends known at asOf (each action known by then, in the action set read); false: as traded',
  includeBackfilled:
    'true: also apply (or list) backfilled actions, whose knowledge date is unknown, so that no point in time could have known them (meta.provenance.pitValid is then false)',
  'getCorporateActions actionSetVersion': "list the action set of this version of the instrument's actions; one above the current version is a 400",
  assetClass: 'only instruments of this asset class',
  interval: 'the bar width: 1-minute bars as stored, or rolled up at read into UTC buckets of this width',
  right: 'only calls, or only puts',
};

export const ADMIN_PARAMETER_WORDS: Readonly<Record<string, string>> = {
  id: "the account's id",
  'revokeKey id': "the key's id (`data.id` when it was created; not the key itself)",
  'rollKey id': "the key's id (`data.id` when it was created; not the key itself)",
  'listKeys accountId': "only this account's keys",
  'getUsage accountId': "only this account's requests",
};
