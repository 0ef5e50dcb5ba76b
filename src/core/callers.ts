// Who calls, as the stages establish it and the services read it: a widget visitor (D-48) or a member
// on the admin surface (D-65).

/** A widget visitor (docs/widget.md, D-48): whose conversations a widget request may reach. */
export interface Visitor {
  id: string;
  /** D-50: set by a verified identity only. */
  external_user_id: string | null;
  /** D-50: the agent's context, from inside the signed identity only (never from the browser). */
  metadata: Record<string, unknown> | null;
}

/** D-65: who calls the admin surface: a member, by their session cookie or a personal access token. */
export interface AdminCaller {
  member_id: string;
  team_id: string;
  email: string;
  role: 'admin' | 'viewer';
  /** The session's id (the SHA-256 of its cookie), when signed in with one. */
  session_id: string | null;
  token_id: string | null;
}
