// Tailwind CSS v4 through its PostCSS plugin (imported in app/globals.css with `@import "tailwindcss"`).
export default {
  plugins: { "@tailwindcss/postcss": {} },
};
