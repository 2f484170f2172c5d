import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../../server/config.ts';

/** The operator files of the repository: docker-compose.yml and ops/ (Prometheus rules, Grafana provisioning and dashboards). */
export const opsPath = (...parts: string[]) => path.join(PROJECT_ROOT, ...parts);

export const readYaml = (...parts: string[]): any => parse(readFileSync(opsPath(...parts), 'utf8'));

export const DASHBOARD = ['ops', 'grafana', 'dashboards', 'market-data-service.json'];
export const ALERT_RULES = ['ops', 'prometheus', 'alerts.yml'];

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: string; uid: string };
  targets?: { refId: string; expr: string; datasource?: { type: string; uid: string } }[];
  panels?: DashboardPanel[];
}

export const readDashboard = (): { uid: string; title: string; panels: DashboardPanel[] } => JSON.parse(readFileSync(opsPath(...DASHBOARD), 'utf8'));

/** Every panel, those inside collapsed rows included. */
export function panelsOf(panels: DashboardPanel[]): DashboardPanel[] {
  return panels.flatMap((p) => [p, ...panelsOf(p.panels ?? [])]);
}

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export const readAlertRules = (): AlertRule[] => (readYaml(...ALERT_RULES).groups as { rules: AlertRule[] }[]).flatMap((g) => g.rules);

/** Each PromQL expression of the dashboard and the alert rules, named by where it is. */
export function opsExpressions(): { where: string; expr: string }[] {
  const dashboard = panelsOf(readDashboard().panels).flatMap((p) =>
    (p.targets ?? []).map((t) => ({ where: `dashboard panel "${p.title}" ${t.refId}`, expr: t.expr })),
  );
  const rules = readAlertRules().map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }));
  return [...dashboard, ...rules];
}

/** GitHub's anchor for a Markdown heading. */
export const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');
