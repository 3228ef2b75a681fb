/** The invite page sets this (the raw invite token) so a sign-up from it may pass AUTH_DISABLE_SIGNUP. */
export const INVITE_COOKIE = "rollbook_invite";
