// The type a dashboard JSON file must satisfy: @grafana/schema's `Dashboard` (the veneer
// type Grafana's own frontend uses), with its string enums read as the strings JSON holds.
//
// Why a transform: TypeScript string enums such as FieldColorModeId or ThresholdsMode are
// nominal, so even the exact JSON value "thresholds" is not assignable to
// FieldColorModeId.Thresholds. `${E}` turns an enum into the union of its string values;
// everything else (literal unions like VariableType, required fields, optional fields,
// index signatures) is kept as the schema declares it.
//
// Why dashboards are checked as object literals (tests/tools/dashboards.sh wraps each JSON
// file as `export const dashboard: DashboardJson = <json>;`) rather than imported with
// resolveJsonModule: an imported JSON module's strings widen to `string`, which no literal
// union accepts (`type: "datasource"` would fail against VariableType), and imported values
// get no excess-property check. A fresh literal keeps literal types and rejects unknown
// keys at every level, so a misspelt "fieldConfg" or "schemaVerson" fails.
import type { Dashboard } from '@grafana/schema';

export type Json<T> = T extends string
  ? `${T}`
  : T extends ReadonlyArray<infer U>
    ? Array<Json<U>>
    : T extends object
      ? { [K in keyof T]: Json<T[K]> }
      : T;

export type DashboardJson = Json<Dashboard>;
